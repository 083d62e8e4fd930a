"""Compliance endpoints under /api/v1/compliance/: only ``compliance`` keys, or staff holding the
permission the admin requires for the same act, reach them; agent keys get 403. Everything stays
inside the caller's tenant."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.urls import re_path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema

from agentstate import streaming
from agentstate.api import people
from agentstate.api.permissions import HasComplianceScope
from agentstate.api.views import EVERY_CATEGORY, TenantAPIView, TenantRequest
from userdata_app.portable import subject_export_lines
from userdata_app.selectors import subject_export_lazy


class SubjectExportView(TenantAPIView):
    reads = EVERY_CATEGORY
    person_named_in = people.TENANT_WIDE
    permission_classes = [HasComplianceScope]
    staff_permission = "userdata_app.export_subject_data"  # as the admin's export action

    @extend_schema(
        summary="Everything held about a user of this tenant (GDPR Art. 15/20)",
        description=(
            "One JSON document: the user's data, and every session with its messages, rounds, checkpoints, "
            "transitions and working state. A user with nothing stored gets empty lists. Streamed as it is "
            "written (no Content-Length): a large export never sits whole in the server's memory."
        ),
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: TenantRequest, user_id: str) -> StreamingHttpResponse:
        return streaming.json_response(subject_export_lazy(subjects=[(request.tenant, user_id)]))


class SubjectPortableExportView(SubjectExportView):
    @extend_schema(
        summary="Everything held about a user of this tenant, in the portable format (JSON Lines)",
        description=(
            "The same data as the JSON export, as the portable format's records (docs/PORTABLE_FORMAT.md): a "
            "header line, then one record per line with its category, each row whole (LangGraph's checkpoints "
            "as the serializer's bytes, artifacts' bytes in base64), in a stable order. The machine-readable "
            "half of a subject access request; `manage.py import_tenant` reads it back. Streamed."
        ),
        responses={(200, "application/jsonl"): OpenApiTypes.STR},
    )
    def get(self, request: TenantRequest, user_id: str) -> StreamingHttpResponse:
        return StreamingHttpResponse(
            streaming.joined(subject_export_lines(tenant=request.tenant, user_id=user_id)),
            content_type="application/jsonl; charset=utf-8",
        )


urlpatterns = [
    re_path(r"^users/(?P<user_id>[^/]+)/export/?$", SubjectExportView.as_view(), name="compliance-subject-export"),
    re_path(
        r"^users/(?P<user_id>[^/]+)/export/portable/?$",
        SubjectPortableExportView.as_view(),
        name="compliance-subject-export-portable",
    ),
]
