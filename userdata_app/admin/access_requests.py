"""Subject-access requests: the Compliance group records one, verifies the requester's identity
(how, by whom, when), exports the subjects' data as JSON and as a printable document, and marks it
fulfilled. Every step calls ``userdata_app.access_requests``; subjects are listed and checked as
on an erasure request (``erasure_requests``' forms and inline)."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from agentstate import streaming
from agentstate.exceptions import DomainError
from userdata_app import access_requests, erasure
from userdata_app.access_log.recorder import subjects_exported
from userdata_app.admin.erasure_requests import (
    PERMISSION_LABELS,
    ErasureSubjectForm,
    ErasureSubjectInline,
    OpenFilter,
    count_rows,
    due_display,
    nothing_found_warning,
    status_badge,
)
from userdata_app.admin.export_document import document_html, readable_time
from userdata_app.models import AccessRequest, AccessSubject, ErasureRequest

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldOpts, _FieldsetSpec

Status = AccessRequest.Status
REVIEW_PERMISSION = "userdata_app.review_access_request"
EXPORT_PERMISSION = "userdata_app.export_subject_data"
REVIEW_LABEL = f"“{dict(AccessRequest._meta.permissions)['review_access_request']}”"
EXPORT_LABEL = PERMISSION_LABELS["export_subject_data"]


class AccessSubjectForm(ErasureSubjectForm):
    class Meta(ErasureSubjectForm.Meta):
        model = AccessSubject


class AccessSubjectInline(ErasureSubjectInline):
    model = AccessSubject
    form = AccessSubjectForm
    verbose_name = "subject (tenant and user id of the person)"
    verbose_name_plural = "subjects: one (tenant, user id) pair per account of this person"

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("tenant", "user_id", "user_id_shown") if self._editable(obj) else ("tenant", "user_id_shown")


class VerifyForm(forms.Form):
    identity_check = forms.CharField(
        label="How the identity was verified",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="E.g. “reply from the account's registered e-mail address”. Recorded with your name and the time.",
    )


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), help_text="Why the request is refused (recorded). No personal data."
    )


# step -> (button label, form, service call); which status allows which step is access_requests.STEPS.
STEPS = {
    "verify": (
        "Mark identity verified",
        VerifyForm,
        lambda obj, data, actor: access_requests.access_request_verify(request=obj, actor=actor, **data),
    ),
    "fulfil": (
        "Mark fulfilled",
        None,
        lambda obj, data, actor: access_requests.access_request_fulfil(request=obj, actor=actor),
    ),
    "reject": (
        "Reject",
        RejectForm,
        lambda obj, data, actor: access_requests.access_request_reject(request=obj, actor=actor, **data),
    ),
}
STEP_INTROS = {
    "verify": "Record how you checked that the requester is the person the subjects below belong to "
    "(or acts for them). The export can be produced once the identity is verified.",
    "fulfil": "Confirm that the export was sent to the person: the request is then answered.",
}


@admin.register(AccessRequest)
class AccessRequestAdmin(admin.ModelAdmin):
    list_display = ("request_label", "status_badge", "reference", "subject_count", "received_on", "due")
    list_display_links = ("request_label",)
    list_filter = (OpenFilter, "status")
    search_fields = ("=reference",)
    ordering = ("-id",)
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    inlines = [AccessSubjectInline]
    change_form_template = "admin/userdata_app/accessrequest/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[AccessRequest]:
        return super().get_queryset(request).annotate(subject_total=Count("subjects"))

    @admin.display(description="request", ordering="id")
    def request_label(self, obj: AccessRequest) -> str:
        return str(obj)

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: AccessRequest) -> SafeString:
        return status_badge(obj)

    @admin.display(description="received", ordering="received_at")
    def received_on(self, obj: AccessRequest) -> date:
        return timezone.localdate(obj.received_at)

    @admin.display(description="subjects", ordering="subject_total")
    def subject_count(self, obj: AccessRequest) -> int:
        return obj.subject_total  # type: ignore[attr-defined]  # annotated by get_queryset

    @admin.display(description="due", ordering="due_on")
    def due(self, obj: AccessRequest) -> str:
        return due_display(obj)

    @admin.display(description="data held about the subjects now")
    def held_display(self, obj: AccessRequest) -> SafeString:
        counts = erasure.subjects_preview(
            subjects=[(s.tenant, s.user_id) for s in obj.subjects.select_related("tenant")],
            scope=ErasureRequest.Scope.EVERYTHING,
        )
        return nothing_found_warning(counts) + format_html(
            '<table class="erasure-counts"><tbody>{}</tbody></table>', count_rows(counts)
        )

    def get_fieldsets(self, request: HttpRequest, obj: AccessRequest | None = None) -> _FieldsetSpec:
        request_fields = ("requester", "reference", "received_at", "notes")
        if obj is None:
            return ((None, {"fields": request_fields}),)
        status = ["status_badge", "due", "status_changed_at", "status_changed_by_name"]
        if obj.verified_at:
            status += ["identity_check", "verified_at", "verified_by_name"]
        if obj.fulfilled_at:
            status += ["fulfilled_at", "fulfilled_by_name"]
        if obj.rejection_reason:
            status.append("rejection_reason")
        fieldsets: list[tuple[str | None, _FieldOpts]] = [
            ("Status", {"fields": tuple(status)}),
            ("Request", {"fields": request_fields}),
        ]
        if obj.status in AccessRequest.OPEN_STATUSES:
            fieldsets.append(("What the export will hold", {"fields": ("held_display",)}))
        return tuple(fieldsets)

    def get_readonly_fields(self, request: HttpRequest, obj: AccessRequest | None = None) -> tuple[str, ...]:
        displays = (
            "status_badge",
            "due",
            "identity_check",
            "verified_at",
            "verified_by_name",
            "fulfilled_at",
            "fulfilled_by_name",
            "rejection_reason",
            "status_changed_at",
            "status_changed_by_name",
            "held_display",
        )
        if obj is None:
            return displays
        if obj.status != Status.RECEIVED:
            return (*displays, "requester", "reference", "received_at", "notes")
        return (*displays, "received_at")  # the due date was computed from it

    def has_change_permission(self, request: HttpRequest, obj: AccessRequest | None = None) -> bool:
        if obj is not None and obj.status not in AccessRequest.OPEN_STATUSES:
            return False  # answered: view only
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: AccessRequest | None = None) -> bool:
        return False  # the record that the person was answered

    def save_model(self, request: HttpRequest, obj: AccessRequest, form: forms.ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
        else:
            access_requests.access_request_received(request=obj)

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<path:object_id>/step/<slug:step>/",
                self.admin_site.admin_view(self.step_view),
                name="userdata_app_accessrequest_step",
            ),
            path(
                "<path:object_id>/export.json",
                self.admin_site.admin_view(self.export_json_view),
                name="userdata_app_accessrequest_export_json",
            ),
            path(
                "<path:object_id>/export.html",
                self.admin_site.admin_view(self.export_html_view),
                name="userdata_app_accessrequest_export_html",
            ),
            *super().get_urls(),
        ]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)
        extra_context = extra_context or {}
        if obj is not None:
            allowed = [(s, label) for s, (label, _, _) in STEPS.items() if access_requests.access_step_allowed(obj, s)]
            may_review = request.user.has_perm(REVIEW_PERMISSION) and self.has_change_permission(request, obj)
            exportable = obj.status in (Status.VERIFIED, Status.FULFILLED)
            may_export = request.user.has_perm(EXPORT_PERMISSION)
            extra_context.update(
                steps=allowed if may_review else [],
                can_export=exportable and may_export,
                # Why a button staff might expect is missing, and the permission their account lacks.
                missing_permissions=[
                    (what, permission)
                    for what, permission, shown in (
                        (", ".join(label.lower() for _, label in allowed), REVIEW_LABEL, allowed and not may_review),
                        ("export the subjects' data", EXPORT_LABEL, exportable and not may_export),
                    )
                    if shown
                ],
            )
        return super().change_view(request, object_id, form_url, extra_context)

    def request_or_404(self, request: HttpRequest, object_id: str) -> AccessRequest:
        obj = self.get_object(request, object_id)
        if obj is None:
            raise Http404("No such access request.")
        return obj

    def step_view(self, request: HttpRequest, object_id: str, step: str) -> HttpResponse:
        obj = self.request_or_404(request, object_id)
        if not request.user.has_perm(REVIEW_PERMISSION):
            raise PermissionDenied("Deciding on access requests is the Compliance group's permission.")
        if step not in STEPS or not self.has_change_permission(request, obj):
            raise PermissionDenied
        label, form_class, apply = STEPS[step]
        form = form_class(request.POST or None) if form_class else None
        if request.method == "POST" and (form is None or form.is_valid()):
            try:
                apply(obj, form.cleaned_data if form else {}, request.user)
            except DomainError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.log_change(request, obj, f"{label} ({obj.get_status_display()})")
                self.message_user(request, f"{obj}: now {obj.get_status_display().lower()}.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:userdata_app_accessrequest_change", args=[obj.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"{label}: {obj}",
            "subtitle": None,
            "opts": self.opts,
            "object": obj,
            "form": form,
            "step_label": label,
            "step": step,
            "intro": STEP_INTROS.get(step, ""),
        }
        return TemplateResponse(request, "admin/userdata_app/erasurerequest/lifecycle.html", context)

    def _exportable(self, request: HttpRequest, object_id: str) -> AccessRequest:
        if not request.user.has_perm(EXPORT_PERMISSION):
            raise PermissionDenied("Exporting a subject's data is the Compliance group's permission.")
        obj = self.request_or_404(request, object_id)
        if obj.status not in (Status.VERIFIED, Status.FULFILLED):
            raise PermissionDenied("Verify the requester's identity before exporting their data.")
        return obj

    def _exported(self, request: HttpRequest, obj: AccessRequest, form: str) -> None:
        """An export is recorded in the request's history and, per person, in the access log."""
        self.log_change(request, obj, f"Exported the subjects' data ({form})")
        subjects_exported(
            actor=request.user.get_username(),
            subjects=[(s.tenant, s.user_id) for s in obj.subjects.select_related("tenant")],
            model="userdata_app.AccessRequest",
            pks=[obj.pk],
        )

    def export_json_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        """The export as JSON, streamed: a large history never sits whole in the worker's memory."""
        obj = self._exportable(request, object_id)
        self._exported(request, obj, "JSON")
        return streaming.json_response(
            access_requests.access_request_document(request=obj),
            **{"Content-Disposition": f'attachment; filename="access-request-{obj.pk}.json"'},
        )

    def export_html_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The same export as a document to print or save as PDF, dates as people read them."""
        obj = self._exportable(request, object_id)
        self._exported(request, obj, "printable")
        document = streaming.materialized(access_requests.access_request_document(request=obj))
        return TemplateResponse(
            request,
            "admin/userdata_app/accessrequest/export.html",
            {"object": obj, "generated_at": readable_time(document["generated_at"]), "body": document_html(document)},
        )
