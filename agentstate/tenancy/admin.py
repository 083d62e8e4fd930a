"""Admin of tenants and their API keys: a new key is shown once (the library's message after
saving); revoking goes through the revoke action, never an edit. Changing a key's expiry, deleting
a key or deleting a tenant go through agentstate.tenancy.services, so this process stops trusting
the affected keys at once."""

from typing import Any, cast

from django.contrib import admin, messages
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import AbstractAPIKey
from rest_framework_api_key.models import APIKey as UnusedLibraryAPIKey

from agentstate.tenancy import services
from agentstate.tenancy.models import APIKey, Tenant

# The library registers its own concrete key model; agentstate uses APIKey (tenant + scope) only.
if admin.site.is_registered(UnusedLibraryAPIKey):
    admin.site.unregister(UnusedLibraryAPIKey)


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")
    readonly_fields = ("created_at",)

    def delete_model(self, request: HttpRequest, obj: Tenant) -> None:
        services.tenant_delete(tenant=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            services.tenant_delete(tenant=tenant)


@admin.register(APIKey)
class TenantAPIKeyAdmin(APIKeyModelAdmin):
    # The ignores below: the library's admin types these attributes as tuples of its own lengths.
    list_display = ("prefix", "name", "tenant", "scope", "user_id", "created", "expiry_date", "_has_expired", "revoked")  # type: ignore[assignment]
    list_filter = ("scope", "revoked", "created")  # type: ignore[assignment]
    list_select_related = ("tenant",)
    search_fields = ("name", "prefix", "tenant__slug")  # type: ignore[assignment]
    autocomplete_fields = ("tenant",)
    actions = ["revoke_keys"]

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> tuple[str, ...]:
        # Revocation is the action's job (it also clears this process's key cache).
        readonly: tuple[str, ...] = ("prefix", "revoked")
        if obj is not None:
            readonly += ("tenant", "scope", "user_id")  # whom a key reaches is fixed when it is made
        if isinstance(obj, APIKey) and obj.revoked:
            readonly += ("name", "expiry_date")
        return readonly

    def save_model(self, request: HttpRequest, obj: AbstractAPIKey, form: Any = None, change: bool = False) -> None:
        if change:
            obj = cast(APIKey, obj)  # the library types its base; this admin edits APIKey only
            services.api_key_update(api_key=obj, name=obj.name, expires_at=obj.expiry_date)
        else:
            super().save_model(request, obj, form, change)  # creates it and shows the key once

    def delete_model(self, request: HttpRequest, obj: APIKey) -> None:
        services.api_key_delete(api_key=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[APIKey]) -> None:
        for api_key in queryset:
            services.api_key_delete(api_key=api_key)

    @admin.action(description="Revoke selected API keys (cannot be undone)", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[APIKey]) -> None:
        keys = list(queryset.filter(revoked=False))
        for api_key in keys:
            services.api_key_revoke(api_key=api_key)
        self.message_user(
            request,
            f"Revoked {len(keys)} key(s). Other server processes stop accepting them within their key cache time.",
            messages.SUCCESS,
        )
