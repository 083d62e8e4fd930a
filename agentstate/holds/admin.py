"""Legal holds in the admin: the Compliance group places them (the add form) and releases them
(the release field of an active hold's page, with a reason); nobody edits or deletes one. Pages
that show a person's or a session's data show the holds on it (``HeldPage``)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from agentstate.exceptions import InvalidInput
from agentstate.holds import services
from agentstate.holds.models import LegalHold


class LegalHoldForm(forms.ModelForm):
    release_reason_given = forms.CharField(
        label="release with reason",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Releasing lets retention, erasure and deletions reach the data again. The hold stays, released.",
    )

    class Meta:
        model = LegalHold
        fields = ("tenant", "user_id", "session_pk", "reference", "reason")

    def clean(self) -> dict[str, Any]:
        """The service's own rules, so that what it would refuse is shown beside its field."""
        cleaned = super().clean() or {}
        try:
            if self.instance.pk is not None:
                cleaned["release_reason_given"] = services.required(
                    cleaned.get("release_reason_given"), field="release_reason_given"
                )
            elif not self.errors:
                services.legal_hold_clean(
                    **{name: cleaned.get(name) or "" for name in ("reference", "reason", "user_id")},
                    session_pk=cleaned.get("session_pk"),
                )
        except InvalidInput as exc:
            for name, errors in exc.fields.items():
                self.add_error(name if name in self.fields else None, errors)
        return cleaned


@admin.register(LegalHold)
class LegalHoldAdmin(admin.ModelAdmin):
    form = LegalHoldForm
    list_display = ("reference", "tenant", "covers", "active", "placed_at", "placed_by_name", "released_at")
    list_filter = (("released_at", admin.EmptyFieldListFilter), "tenant")
    list_select_related = ("tenant",)
    search_fields = ("reference",)
    ordering = ("-placed_at",)

    @admin.display(boolean=True, description="active")
    def active(self, obj: LegalHold) -> bool:
        return obj.is_active

    def get_fields(self, request: HttpRequest, obj: Model | None = None) -> list[Any]:
        if obj is None:
            return ["tenant", "user_id", "session_pk", "reference", "reason"]
        fields = ["tenant", "covers", "user_id", "session_pk", "reference", "reason", "placed_at", "placed_by_name"]
        if isinstance(obj, LegalHold) and obj.is_active:
            return [*fields, "release_reason_given"]
        return [*fields, "released_at", "released_by_name", "release_reason"]

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        if obj is None:
            return []
        return [f for f in self.get_fields(request, obj) if f != "release_reason_given"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("holds.place_legalhold")

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        active = obj is None or (isinstance(obj, LegalHold) and obj.is_active)
        return active and request.user.has_perm("holds.release_legalhold")

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False  # released, never deleted

    def save_model(self, request: HttpRequest, obj: LegalHold, form: forms.ModelForm, change: bool) -> None:
        if change:
            services.legal_hold_release(hold=obj, reason=form.cleaned_data["release_reason_given"], actor=request.user)
            return
        placed = services.legal_hold_place(
            tenant=obj.tenant,
            user_id=obj.user_id,
            session_pk=obj.session_pk,
            reference=obj.reference,
            reason=obj.reason,
            actor=request.user,
        )
        obj.pk, obj.placed_at, obj.placed_by_name = placed.pk, placed.placed_at, placed.placed_by_name


class HeldPage(admin.ModelAdmin):
    """A page of a person's or a session's data: it opens with a warning naming each active legal
    hold on what it shows (``holds_of_object`` says which), so staff see it before acting."""

    def holds_of_object(self, obj: Any) -> QuerySet[LegalHold]:
        raise NotImplementedError

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> Any:
        if obj is not None:
            for hold in self.holds_of_object(obj).filter(released_at__isnull=True):
                messages.warning(
                    request,
                    f"Legal hold {hold.reference} covers {hold.covers} here (placed {hold.placed_at:%Y-%m-%d} by "
                    f"{hold.placed_by_name}): nothing it covers can be deleted, by retention, erasure or the API.",
                )
        return super().render_change_form(request, context, add, change, form_url, obj)
