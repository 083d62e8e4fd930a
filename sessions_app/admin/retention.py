"""Retention: each tenant's policy, edited through the same rules the API trusts, and the record of
what each ``apply_retention`` run removed."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from agentstate.admin.options import ReadOnlyAdmin
from agentstate.exceptions import InvalidInput
from sessions_app import services
from sessions_app.models import RetentionPolicy, RetentionRun


class RetentionPolicyForm(forms.ModelForm):
    """The rules are checked by the same service the API and the command trust."""

    class Meta:
        model = RetentionPolicy
        fields = ("tenant", *services.retention.POLICY_FIELDS)

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        rules = {name: cleaned.get(name) for name in services.retention.POLICY_FIELDS if name not in self.errors}
        try:
            services.retention_policy_clean(**rules)
        except InvalidInput as exc:
            for name, errors in exc.fields.items():
                self.add_error(name, errors)
        return cleaned


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(admin.ModelAdmin):
    """One policy per tenant; an empty rule keeps everything. ``apply_retention`` enforces it."""

    form = RetentionPolicyForm
    list_display = ("tenant", *services.retention.POLICY_FIELDS, "updated_at")
    list_select_related = ("tenant",)
    ordering = ("tenant__slug",)

    def get_readonly_fields(self, request: HttpRequest, obj: RetentionPolicy | None = None) -> tuple[str, ...]:
        return ("tenant",) if obj is not None else ()  # the policy's key: a tenant keeps its own

    def save_model(self, request: HttpRequest, obj: RetentionPolicy, form: RetentionPolicyForm, change: bool) -> None:
        saved = services.retention_policy_save(
            tenant=obj.tenant, **{name: form.cleaned_data.get(name) for name in services.retention.POLICY_FIELDS}
        )
        obj.pk, obj.updated_at = saved.pk, saved.updated_at


@admin.register(RetentionRun)
class RetentionRunAdmin(ReadOnlyAdmin):
    """What each ``apply_retention`` run removed (or, dry, would have): a record, never edited."""

    list_display = ("started_at", "tenant_slug", "dry_run", "total", "duration_seconds")
    list_filter = ("dry_run",)
    ordering = ("-started_at",)
    fields = ("started_at", "tenant_slug", "dry_run", "duration_seconds", "counts", "derived", "held")
