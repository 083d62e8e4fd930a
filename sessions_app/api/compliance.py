"""Compliance endpoints of process state under /api/v1/compliance/: the tenant's retention policy,
read-only here (staff edit it in the admin). Compliance keys, or staff allowed to view policies."""

from __future__ import annotations

from django.urls import re_path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from agentstate.api import people
from agentstate.api.permissions import HasComplianceScope
from agentstate.api.views import TenantAPIView, TenantRequest
from sessions_app.backends import retention_rules
from sessions_app.selectors.export import retention_policy_as_dict


class RetentionPolicySerializer(serializers.Serializer):
    configured = serializers.BooleanField(help_text="False: the tenant has no policy and everything is kept.")
    delete_ended_after_days = serializers.IntegerField(
        allow_null=True, help_text="Ended sessions are deleted this many days after they ended."
    )
    end_idle_after_days = serializers.IntegerField(
        allow_null=True, help_text="Live sessions idle this many days are ended."
    )
    keep_latest_rounds = serializers.IntegerField(
        allow_null=True, help_text="Rounds kept per session (the largest ids)."
    )
    drop_messages_after_days = serializers.IntegerField(
        allow_null=True, help_text="Messages older than this are dropped (null: off)."
    )
    updated_at = serializers.DateTimeField(allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        """The core's rules, then each registered backend's (``sessions_app.backends``)."""
        fields = super().get_fields()
        updated_at = fields.pop("updated_at")
        for rule in retention_rules():
            fields[rule.policy_field] = serializers.IntegerField(allow_null=True, help_text=rule.help_text)
        return {**fields, "updated_at": updated_at}


class RetentionPolicyView(TenantAPIView):
    reads = ()
    person_named_in = people.TENANT_WIDE
    permission_classes = [HasComplianceScope]
    staff_permission = "sessions_app.view_retentionpolicy"  # as the admin's policy page

    @extend_schema(
        summary="This tenant's retention policy",
        description=(
            "How long this tenant's process state lives, as `apply_retention` enforces it. Every rule is null "
            "when the tenant has no policy (everything is kept) or the rule is empty."
        ),
        responses={200: RetentionPolicySerializer},
    )
    def get(self, request: TenantRequest) -> Response:
        return Response(RetentionPolicySerializer(retention_policy_as_dict(tenant=request.tenant)).data)


urlpatterns = [
    re_path(r"^retention/?$", RetentionPolicyView.as_view(), name="compliance-retention-policy"),
]
