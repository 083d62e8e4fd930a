"""Admin of tenants and their API keys: a new key is shown once (the library's message after
saving); revoking goes through the revoke action, never an edit. Changing a key's expiry, deleting
a key or deleting a tenant go through agentstate.tenancy.services, so this process stops trusting
the affected keys at once."""

from django.contrib import admin, messages
from rest_framework_api_key.admin import APIKeyModelAdmin
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

    def delete_model(self, request, obj):
        services.tenant_delete(tenant=obj)

    def delete_queryset(self, request, queryset):
        for tenant in queryset:
            services.tenant_delete(tenant=tenant)


@admin.register(APIKey)
class TenantAPIKeyAdmin(APIKeyModelAdmin):
    list_display = ("prefix", "name", "tenant", "scope", "created", "expiry_date", "_has_expired", "revoked")
    list_filter = ("scope", "revoked", "created")
    list_select_related = ("tenant",)
    search_fields = ("name", "prefix", "tenant__slug")
    autocomplete_fields = ("tenant",)
    actions = ["revoke_keys"]

    def get_readonly_fields(self, request, obj=None):
        # Revocation is the action's job (it also clears this process's key cache).
        readonly = ("prefix", "revoked")
        if obj is not None:
            readonly += ("tenant", "scope")
        if obj is not None and obj.revoked:
            readonly += ("name", "expiry_date")
        return readonly

    def save_model(self, request, obj, form, change):
        if change:
            services.api_key_update(api_key=obj, name=obj.name, expires_at=obj.expiry_date)
        else:
            super().save_model(request, obj, form, change)  # creates it and shows the key once

    def delete_model(self, request, obj):
        services.api_key_delete(api_key=obj)

    def delete_queryset(self, request, queryset):
        for api_key in queryset:
            services.api_key_delete(api_key=api_key)

    @admin.action(description="Revoke selected API keys (cannot be undone)", permissions=["change"])
    def revoke_keys(self, request, queryset):
        keys = list(queryset.filter(revoked=False))
        for api_key in keys:
            services.api_key_revoke(api_key=api_key)
        self.message_user(
            request,
            f"Revoked {len(keys)} key(s). Other server processes stop accepting them within their key cache time.",
            messages.SUCCESS,
        )
