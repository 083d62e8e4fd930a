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
from sessions_app.backends import retention_rules
from sessions_app.models import RetentionPolicy, RetentionRun
from sessions_app.selectors import retention_policy_fields


class RetentionPolicyForm(forms.ModelForm):
    """The rules are checked by the same service the API and the command trust. The backends'
    rules are fields of their own (``RetentionPolicyAdmin.get_form``), read from ``backend_rules``."""

    class Meta:
        model = RetentionPolicy
        fields = ("tenant", *RetentionPolicy.RULES)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for rule in retention_rules():
            self.initial.setdefault(rule.policy_field, self.instance.backend_rules.get(rule.policy_field))

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        rules = {name: cleaned.get(name) for name in retention_policy_fields() if name not in self.errors}
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
    list_select_related = ("tenant",)
    ordering = ("tenant__slug",)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        """The form with a field per rule the installed backends registered."""
        fields = {
            rule.policy_field: forms.IntegerField(required=False, help_text=rule.help_text)
            for rule in retention_rules()
        }
        kwargs["form"] = type("RetentionPolicyForm", (self.form,), fields)
        return super().get_form(request, obj, change, **kwargs)

    def get_list_display(self, request: HttpRequest) -> tuple[Any, ...]:
        return ("tenant", *(_rule_column(name) for name in retention_policy_fields()), "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: RetentionPolicy | None = None) -> tuple[str, ...]:
        return ("tenant",) if obj is not None else ()  # the policy's key: a tenant keeps its own

    def save_model(self, request: HttpRequest, obj: RetentionPolicy, form: RetentionPolicyForm, change: bool) -> None:
        saved = services.retention_policy_save(
            tenant=obj.tenant, **{name: form.cleaned_data.get(name) for name in retention_policy_fields()}
        )
        obj.pk, obj.updated_at = saved.pk, saved.updated_at


def _rule_column(name: str) -> Any:
    """A column of the policy list: the core's rules are columns, a backend's is read from
    ``backend_rules``."""
    if name in RetentionPolicy.RULES:
        return name
    return admin.display(description=name.replace("_", " "))(lambda policy: policy.rule(name))


@admin.register(RetentionRun)
class RetentionRunAdmin(ReadOnlyAdmin):
    """What each ``apply_retention`` run removed (or, dry, would have): a record, never edited."""

    list_display = ("started_at", "tenant_slug", "dry_run", "total", "duration_seconds")
    list_filter = ("dry_run",)
    ordering = ("-started_at",)
    fields = ("started_at", "tenant_slug", "dry_run", "duration_seconds", "counts", "derived", "held")
