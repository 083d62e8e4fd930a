"""Erasure requests: the compliance officer's workflow, from receipt through the lifecycle steps to
execution and its receipt, and the subject access export.

Executing an erasure is an action with a confirmation page listing what will be erased (like
Django's delete_selected), acting only on the posted confirmation, and needs the
``userdata_app.execute_erasure`` permission (the "Compliance" group has it). A subject's user id is
taken exactly as typed (never stripped) and shown with its invisible characters spelled out:
"alice" and "alice\u00a0" are two people; one that begins or ends with whitespace is refused when
nothing is held under it (``erasure.subject_id_check``: "ada " typed for "ada").
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from agentstate.admin.display import identifier_display, identifier_html
from agentstate.exceptions import DomainError, InvalidInput
from agentstate.identifiers import IdentifierFormField
from userdata_app import erasure
from userdata_app.admin.requests import OpenFilter, RequestAdmin, Step, VerifyForm, count_rows, counts_table
from userdata_app.models import ErasureRequest, ErasureSubject, RequestSubject
from userdata_app.selectors import subject_export_lazy

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldOpts, _FieldsetSpec

Status = ErasureRequest.Status


class ErasureSubjectForm(forms.ModelForm):
    user_id = IdentifierFormField(
        label="User id",
        help_text="Exactly as the API stored it: spaces, no-break spaces and case count.",
    )

    class Meta:
        model: type[RequestSubject] = ErasureSubject  # an access request's subjects reuse this form
        fields = ("tenant", "user_id")


class ErasureSubjectFormSet(forms.BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        seen: set[tuple[Any, Any]] = set()
        for form in self.forms:
            if not form.cleaned_data or form.cleaned_data.get("DELETE"):
                continue
            tenant, user_id = form.cleaned_data.get("tenant"), form.cleaned_data.get("user_id")
            if (tenant, user_id) in seen:
                raise ValidationError("Each (tenant, user id) pair may be listed once.")
            seen.add((tenant, user_id))
            if tenant is not None and user_id:
                try:
                    erasure.subject_id_check(tenant=tenant, user_id=user_id)
                except InvalidInput as exc:
                    form.add_error("user_id", exc.fields["user_id"])


class ErasureSubjectInline(admin.TabularInline):
    model: type[RequestSubject] = ErasureSubject
    form = ErasureSubjectForm
    formset = ErasureSubjectFormSet
    extra = 1
    min_num = 1
    verbose_name = "subject (tenant and user id of the same person)"
    verbose_name_plural = "subjects: one (tenant, user id) pair per account of this person"

    def _editable(self, obj: ErasureRequest | None) -> bool:
        return obj is None or obj.status == Status.RECEIVED

    user_id_shown = identifier_display("user_id", description="user id, spelled out", length=True)

    def get_fields(self, request: HttpRequest, obj: ErasureRequest | None = None) -> tuple[str, ...]:
        if self._editable(obj):
            return ("tenant", "user_id", "user_id_shown")
        return ("tenant", "user_id_shown", "subject_hash", "hash_key_id")

    def get_readonly_fields(self, request: HttpRequest, obj: ErasureRequest | None = None) -> tuple[str, ...]:
        return ("user_id_shown",) if self._editable(obj) else self.get_fields(request, obj)

    def get_extra(self, request: HttpRequest, obj: ErasureRequest | None = None, **kwargs: Any) -> int:
        return 1 if obj is None else 0

    def has_add_permission(self, request: HttpRequest, obj: ErasureRequest | None = None) -> bool:
        return self._editable(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: ErasureRequest | None = None) -> bool:
        return self._editable(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: ErasureRequest | None = None) -> bool:
        return self._editable(obj) and super().has_delete_permission(request, obj)


DEVELOPMENT_KEY_WARNING = mark_safe(
    '<p class="errornote development-key">Signed with the development key “dev”: this service runs without '
    "AGENTSTATE_ERASURE_HMAC_KEYS (quickstart, DEBUG). Such a receipt proves nothing to anyone else; set real "
    "keys before erasing real people's data (docs/COMPLIANCE.md).</p>"
)


def withheld_html(explanations: list[str]) -> SafeString:
    """What legal holds keep from an erasure (agentstate.holds), as a warning: empty without any."""
    if not explanations:
        return SafeString("")
    return format_html(
        '<div class="erasure-withheld"><p class="erasure-warning">Withheld by legal holds (kept, and writable):</p>'
        "<ul>{}</ul></div>",
        format_html_join("", "<li>{}</li>", ((text,) for text in explanations)),
    )


def status_label(status: str) -> str:
    """A status as the badges and the history show it ("On hold", not "on_hold")."""
    return Status(status).label if status else "—"


class ExtendForm(forms.Form):
    months = forms.TypedChoiceField(choices=[(1, "1 month"), (2, "2 months")], coerce=int, label="Extend by")
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), help_text="Why more time is needed (recorded).")


class HoldForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), help_text="The legal hold (recorded). No personal data."
    )


class ReleaseForm(forms.Form):
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), help_text="Why the request is refused (recorded)."
    )
    subject_informed_on = forms.DateField(
        label="Person told on",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="The date the person was told.",
    )


# What a step recorded on the request, shown under its status once set.
STATUS_NOTES = (
    "extension_reason",
    "hold_reason",
    "rejection_reason",
    "subject_informed_on",
    "failure",
    "storage_pending",
)

# step -> (button label, form, service call); which status allows which step is erasure.STEPS.
LIFECYCLE_STEPS: dict[str, Step] = {
    "verify": (
        "Mark verified",
        VerifyForm,
        lambda obj, data, actor: erasure.erasure_request_verify(request=obj, actor=actor, **data),
    ),
    "extend": (
        "Extend deadline",
        ExtendForm,
        lambda obj, data, actor: erasure.erasure_request_extend(request=obj, actor=actor, **data),
    ),
    "hold": (
        "Put on legal hold",
        HoldForm,
        lambda obj, data, actor: erasure.erasure_request_hold(request=obj, actor=actor, **data),
    ),
    "release": (
        "Release hold",
        ReleaseForm,
        lambda obj, data, actor: erasure.erasure_request_release(request=obj, actor=actor, **data),
    ),
    "reject": (
        "Reject",
        RejectForm,
        lambda obj, data, actor: erasure.erasure_request_reject(request=obj, actor=actor, **data),
    ),
}


@admin.register(ErasureRequest)
class ErasureRequestAdmin(RequestAdmin):
    list_display = (
        "request_label",
        "status_badge",
        "scope_short",
        "subject_count",
        "received_on",
        "due",
        "status_changed_at",
    )
    list_filter = (OpenFilter, "status", "scope")
    inlines = [ErasureSubjectInline]
    actions = ["execute_erasure", "export_subject_data"]
    change_form_template = "admin/userdata_app/erasurerequest/change_form.html"
    steps = LIFECYCLE_STEPS
    step_route = "lifecycle"
    review_permission = "review_erasure"
    request_fields = ("scope", "received_at", "requested_by", "reason")
    display_fields = (
        "status_badge",
        "due",
        "status_changed_at",
        "identity_check",
        *STATUS_NOTES,
        "receipt_display",
        "events_display",
        "preview_display",
    )

    # --- Columns and read-only displays -------------------------------------------------------

    @admin.display(description="scope", ordering="scope")
    def scope_short(self, obj: ErasureRequest) -> str:
        return "everything" if obj.scope == ErasureRequest.Scope.EVERYTHING else "user data only"

    @admin.display(description="identity verified how")
    def identity_check(self, obj: ErasureRequest) -> str:
        return erasure.erasure_identity_check(request=obj)

    @admin.display(description="erased")
    def receipt_display(self, obj: ErasureRequest) -> str:
        receipt = obj.receipt
        hashes = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            ((s["tenant"], s["key_id"], s["hmac_sha256"]) for s in receipt.subjects),
        )
        return format_html(
            '<p class="receipt-tools"><a class="button" href="{}" download>Download receipt (JSON)</a> '
            '<button type="button" class="button" onclick="window.print()">Print receipt</button></p>'
            "{}<p>Executed {} by <strong>{}</strong>, scope <strong>{}</strong>.</p>"
            "<p>Requested by <strong>{}</strong>; received {}, due {}.</p>"
            '<div class="erasure-receipt"><table class="erasure-counts">'
            "<thead><tr><th>erased</th><th>rows</th></tr></thead><tbody>{}</tbody></table>"
            '<table class="erasure-hashes">'
            '<caption>Subject hashes (HMAC-SHA256 of ["tenant","user id"]; no user id is kept)</caption>'
            "<thead><tr><th>tenant</th><th>key id</th><th>hmac_sha256</th></tr></thead><tbody>{}</tbody></table></div>",
            reverse("admin:userdata_app_erasurerequest_receipt", args=[obj.pk]),
            DEVELOPMENT_KEY_WARNING if erasure.signed_with_development_key(receipt=receipt) else "",
            receipt.executed_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
            receipt.executed_by_name,
            receipt.get_scope_display(),
            obj.requested_by or "—",
            timezone.localdate(obj.received_at),
            obj.due_on,
            count_rows(receipt.counts),
            hashes,
        ) + withheld_html(
            [f"Legal hold {', '.join(w['holds'])}: {erasure.counts_text(w['counts'])}" for w in receipt.withheld]
        )

    @admin.display(description="history")
    def events_display(self, obj: ErasureRequest) -> SafeString:
        rows = format_html_join(
            "",
            "<tr><td class='nowrap'>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    e.at.strftime("%Y-%m-%d %H:%M:%S"),
                    e.actor_name,
                    f"{status_label(e.from_status)} → {status_label(e.to_status)}",
                    e.note,
                )
                for e in obj.events.order_by("at", "id")
            ),
        )
        return format_html(
            '<table class="agentstate-table">'
            "<thead><tr><th>when</th><th>who</th><th>step</th><th>note</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="rows that would be erased now")
    def preview_display(self, obj: ErasureRequest) -> SafeString:
        return counts_table(erasure.erasure_preview(request=obj)) + withheld_html(
            [w.explanation for w in erasure.erasure_withheld(request=obj)]
        )

    def get_fieldsets(self, request: HttpRequest, obj: ErasureRequest | None = None) -> _FieldsetSpec:
        if obj is None:
            return ((None, {"fields": self.request_fields}),)
        status_fields = ["status_badge", "due", "status_changed_at"]
        status_fields += ["identity_check"] if erasure.erasure_identity_check(request=obj) else []
        status_fields += [name for name in STATUS_NOTES if getattr(obj, name)]
        fieldsets: list[tuple[str | None, _FieldOpts]] = [
            ("Status", {"fields": tuple(status_fields)}),
            ("Request", {"fields": self.request_fields}),
        ]
        if obj.status == Status.EXECUTED:
            fieldsets.insert(0, ("Receipt", {"fields": ("receipt_display",)}))
        elif obj.status in ErasureRequest.OPEN_STATUSES:
            fieldsets.append(("Preview", {"fields": ("preview_display",)}))
        fieldsets.append(("History", {"fields": ("events_display",)}))
        return tuple(fieldsets)

    def has_execute_erasure_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("userdata_app.execute_erasure")

    # django-stubs 6 adds Django 6.0's action_location to the signature; Django 5.2 calls (request, queryset).
    def response_action(  # type: ignore[override]
        self, request: HttpRequest, queryset: QuerySet[ErasureRequest]
    ) -> HttpResponseBase | None:
        """A selection holding a key that is not a request id (a forged form) selects nothing:
        Django would hand it to the database and fail with a server error."""
        try:
            for pk in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME):
                self.opts.pk.run_validators(self.opts.pk.to_python(pk))  # a number, in the column's range
        except ValidationError:
            self.message_user(
                request, "The selection holds a key that is not an erasure request: nothing done.", messages.ERROR
            )
            return None
        return super().response_action(request, queryset)

    def request_received(self, request: HttpRequest, obj: ErasureRequest) -> None:
        erasure.erasure_request_received(request=obj, actor=request.user)

    def save_formset(self, request: HttpRequest, form: forms.ModelForm, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        erasure.erasure_subjects_added(subjects=formset.new_objects, actor=request.user)

    # --- Lifecycle steps and the change page's tools ------------------------------------------

    def step_allowed(self, obj: ErasureRequest, step: str) -> bool:
        return erasure.step_allowed(obj, step)

    def step_context(self, obj: ErasureRequest, step: str) -> dict[str, str]:
        if step != "verify":
            return {}
        nothing_held = not any(erasure.erasure_preview(request=obj).values())
        return {
            "intro": "Record how you checked that the requester is the person the subjects below belong to "
            "(or acts for them). The erasure can be executed once the identity is verified.",
            "warning": "Nothing is held under these subjects: verifying would let an erasure run for no one. "
            "Check each user id and tenant first."
            if nothing_held
            else "",
        }

    def tools(self, obj: ErasureRequest) -> list[tuple[str, str, str, bool]]:
        return [
            ("can_execute", "execute erasure", "execute_erasure", erasure.step_allowed(obj, "execute")),
            ("can_export", "export subject data", "export_subject_data", obj.status != Status.EXECUTED),
        ]

    def object_views(self) -> list[tuple[str, str, Any]]:
        return [
            *super().object_views(),
            ("execute/", "execute", self.execute_view),
            ("export/", "export", self.export_view),
            ("receipt/", "receipt", self.receipt_view),
        ]

    # --- Execution: preview, then act on the posted confirmation ----------------------------

    @admin.action(permissions=["execute_erasure"], description="Execute erasure of selected verified requests…")
    def execute_erasure(self, request: HttpRequest, queryset: QuerySet[ErasureRequest]) -> HttpResponse | None:
        selected = list(queryset.order_by("id"))
        executable = [obj for obj in selected if erasure.step_allowed(obj, "execute")]
        skipped = [obj for obj in selected if obj not in executable]
        if not executable:
            self.message_user(
                request, "None of the selected requests is verified: nothing to execute.", messages.WARNING
            )
            return None
        if request.POST.get("post") == "yes":
            receipts = []
            for obj in executable:
                try:
                    receipts.append(
                        erasure.erasure_execute(
                            request=obj, actor=request.user, withhold_held=request.POST.get("withhold_held") == "yes"
                        )
                    )
                except DomainError as exc:
                    self.message_user(request, f"{obj}: {exc.message}", messages.ERROR)
                else:
                    self.log_change(request, obj, "Executed erasure; receipt kept")
            for receipt in receipts:
                self.message_user(
                    request,
                    f"{receipt.request}: erased ({erasure.counts_text(receipt.counts)}). The receipt is below.",
                    messages.SUCCESS,
                )
            if len(executable) == 1:
                return HttpResponseRedirect(
                    reverse("admin:userdata_app_erasurerequest_change", args=[executable[0].pk])
                )
            return None
        previews = [
            {
                "request": obj,
                "subjects": [
                    (s.tenant.slug, identifier_html(s.user_id))
                    for s in obj.subjects.select_related("tenant").exclude(user_id="").order_by("id")
                ],
                "counts": (counts := erasure.erasure_preview(request=obj)),
                "count_rows": count_rows(counts),
                "kept": obj.scope == ErasureRequest.Scope.USER_DATA,
                "withheld": [w.explanation for w in erasure.erasure_withheld(request=obj)],
            }
            for obj in executable
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "Are you sure?",
            "subtitle": None,
            "opts": self.opts,
            "previews": previews,
            "withholding": any(p["withheld"] for p in previews),
            "single": executable[0] if len(executable) == 1 else None,  # the breadcrumb leads back to it
            "skipped": skipped,
            "queryset": executable,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "changelist_url": reverse("admin:userdata_app_erasurerequest_changelist"),
        }
        return TemplateResponse(request, "admin/userdata_app/erasurerequest/execute_confirmation.html", context)

    def execute_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The change page's "Execute erasure…" button: the same confirmation as the action."""
        if not self.has_execute_erasure_permission(request):
            raise PermissionDenied
        obj = self.request_or_404(request, object_id)
        response = self.execute_erasure(request, ErasureRequest.objects.filter(pk=obj.pk))
        return response or HttpResponseRedirect(reverse("admin:userdata_app_erasurerequest_change", args=[obj.pk]))

    def receipt_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The receipt as a JSON file to keep (what the receipt section shows; no subject id)."""
        obj = self.request_or_404(request, object_id)
        if not self.has_view_permission(request, obj):
            raise PermissionDenied
        if obj.status != Status.EXECUTED:
            raise Http404("This request has no receipt: it was not executed.")
        return json_attachment(
            erasure.receipt_document(receipt=obj.receipt), filename=f"erasure-receipt-request-{obj.pk}.json"
        )

    # --- Subject access export ----------------------------------------------------------------

    @admin.action(permissions=["export_subject_data"], description="Export everything held about the subjects (JSON)")
    def export_subject_data(
        self, request: HttpRequest, queryset: QuerySet[ErasureRequest]
    ) -> StreamingHttpResponse | None:
        subjects = (
            ErasureSubject.objects.filter(request__in=queryset)
            .exclude(user_id="")
            .select_related("tenant")
            .order_by("id")
        )
        pairs = list(dict.fromkeys((s.tenant, s.user_id) for s in subjects))
        if not pairs:
            self.message_user(
                request, "No subject ids left to export (executed requests keep only hashes).", messages.WARNING
            )
            return None
        requests = list(queryset.order_by("pk"))
        self.subjects_exported(request, subjects=pairs, requests=requests)
        ids = "-".join(str(obj.pk) for obj in requests)
        return self.export_download(subject_export_lazy(subjects=pairs), filename=f"subject-export-request-{ids}.json")

    def export_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        obj = self.exported_request_or_403(request, object_id)
        response = self.export_subject_data(request, ErasureRequest.objects.filter(pk=obj.pk))
        return response or HttpResponseRedirect(reverse("admin:userdata_app_erasurerequest_change", args=[obj.pk]))


def json_attachment(document: dict[str, Any], *, filename: str) -> HttpResponse:
    """A JSON document staff download and keep (a subject export, a receipt)."""
    response = HttpResponse(json.dumps(document, indent=2, ensure_ascii=False), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
