"""Subject-access requests: the Compliance group records one, verifies the requester's identity
(how, by whom, when), exports the subjects' data as JSON and as a printable document, and marks it
fulfilled. Every step calls ``userdata_app.access_requests``; subjects are listed and checked as
on an erasure request (``erasure_requests``' forms and inline)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from agentstate import streaming
from userdata_app import access_requests, erasure
from userdata_app.admin.erasure_requests import ErasureSubjectForm, ErasureSubjectInline
from userdata_app.admin.export_document import document_html_pieces, readable_time
from userdata_app.admin.requests import OpenFilter, RequestAdmin, Step, VerifyForm, counts_table
from userdata_app.models import AccessRequest, AccessSubject, ErasureRequest

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldOpts, _FieldsetSpec

Status = AccessRequest.Status
# Where the printable export's page holds the document, which is streamed in its place.
DOCUMENT = mark_safe("<!-- the subject export -->")


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


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), help_text="Why the request is refused (recorded). No personal data."
    )


# step -> (button label, form, service call); which status allows which step is access_requests.STEPS.
STEPS: dict[str, Step] = {
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
class AccessRequestAdmin(RequestAdmin):
    list_display = ("request_label", "status_badge", "reference", "subject_count", "received_on", "due")
    list_filter = (OpenFilter, "status")
    search_fields = ("=reference",)
    inlines = [AccessSubjectInline]
    change_form_template = "admin/userdata_app/accessrequest/change_form.html"
    steps = STEPS
    review_permission = "review_access_request"
    request_fields = ("requester", "reference", "received_at", "notes")
    display_fields = (
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

    @admin.display(description="data held about the subjects now")
    def held_display(self, obj: AccessRequest) -> str:
        return counts_table(
            erasure.subjects_preview(subjects=self.subjects(obj), scope=ErasureRequest.Scope.EVERYTHING)
        )

    def get_fieldsets(self, request: HttpRequest, obj: AccessRequest | None = None) -> _FieldsetSpec:
        if obj is None:
            return ((None, {"fields": self.request_fields}),)
        status = ["status_badge", "due", "status_changed_at", "status_changed_by_name"]
        if obj.verified_at:
            status += ["identity_check", "verified_at", "verified_by_name"]
        if obj.fulfilled_at:
            status += ["fulfilled_at", "fulfilled_by_name"]
        if obj.rejection_reason:
            status.append("rejection_reason")
        fieldsets: list[tuple[str | None, _FieldOpts]] = [
            ("Status", {"fields": tuple(status)}),
            ("Request", {"fields": self.request_fields}),
        ]
        if obj.status in AccessRequest.OPEN_STATUSES:
            fieldsets.append(("What the export will hold", {"fields": ("held_display",)}))
        return tuple(fieldsets)

    def request_received(self, request: HttpRequest, obj: AccessRequest) -> None:
        access_requests.access_request_received(request=obj)

    def step_allowed(self, obj: AccessRequest, step: str) -> bool:
        return access_requests.access_step_allowed(obj, step)

    def step_context(self, obj: AccessRequest, step: str) -> dict[str, str]:
        return {"intro": STEP_INTROS.get(step, "")}

    def tools(self, obj: AccessRequest) -> list[tuple[str, str, str, bool]]:
        return [("can_export", "export the subjects' data", "export_subject_data", self.exportable(obj))]

    def object_views(self) -> list[tuple[str, str, Any]]:
        return [
            *super().object_views(),
            ("export.json", "export_json", self.export_json_view),
            ("export.html", "export_html", self.export_html_view),
        ]

    @staticmethod
    def exportable(obj: AccessRequest) -> bool:
        return obj.status in (Status.VERIFIED, Status.FULFILLED)

    @staticmethod
    def subjects(obj: AccessRequest) -> list[Any]:
        return [(s.tenant, s.user_id) for s in obj.subjects.select_related("tenant")]

    def _exported(self, request: HttpRequest, object_id: str, form: str) -> AccessRequest:
        """The request whose export is served, once its identity is verified; the export is
        recorded in the request's history and, per person, in the access log."""
        obj = self.exported_request_or_403(request, object_id)
        if not self.exportable(obj):
            raise PermissionDenied("Verify the requester's identity before exporting their data.")
        self.log_change(request, obj, f"Exported the subjects' data ({form})")
        self.subjects_exported(request, subjects=self.subjects(obj), requests=[obj])
        return obj

    def export_json_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        """The export as JSON, streamed: a large history never sits whole in the worker's memory."""
        obj = self._exported(request, object_id, "JSON")
        return self.export_download(
            access_requests.access_request_document(request=obj), filename=f"access-request-{obj.pk}.json"
        )

    def export_html_view(self, request: HttpRequest, object_id: str) -> StreamingHttpResponse:
        """The same export as a document to print or save as PDF, dates as people read them,
        streamed as the JSON export is: the page around it, then the document as it is read."""
        obj = self._exported(request, object_id, "printable")
        document = access_requests.access_request_document(request=obj)
        page = render_to_string(
            "admin/userdata_app/accessrequest/export.html",
            {"object": obj, "generated_at": readable_time(document["generated_at"]), "body": DOCUMENT},
            request,
        )
        before, after = page.split(DOCUMENT, 1)
        return StreamingHttpResponse(
            streaming.joined(itertools.chain([before], document_html_pieces(document), [after])),
            content_type="text/html; charset=utf-8",
        )
