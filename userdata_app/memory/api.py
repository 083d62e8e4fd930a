"""The store's endpoint, /api/v1/store/batch/: one request per ``BaseStore.batch`` call."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from agentstate.api.schema import error_responses
from agentstate.api.serializers import StrictInput, validated
from agentstate.api.views import TenantAPIView, TenantRequest
from userdata_app.memory import services


class StoreBatchInput(StrictInput):
    ops = serializers.ListField(
        child=serializers.JSONField(),
        help_text='Operations run in one transaction: {"op": "get", namespace, key, refresh_ttl}, '
        '{"op": "put", namespace, key, value (object, or null to delete), ttl (minutes or null)}, '
        '{"op": "search", namespace_prefix, filter, limit, offset, query, refresh_ttl}, '
        '{"op": "list_namespaces", prefix, suffix, max_depth, limit, offset}. A stored item\'s '
        'namespace must start with ["users", "<user_id>"].',
    )


class StoreBatchOut(serializers.Serializer):
    results = serializers.ListField(
        child=serializers.JSONField(allow_null=True),
        help_text="One per operation, in order: an item or null (get), a list of items (search), a list "
        "of namespaces (list_namespaces), null (put).",
    )


class StoreBatchView(TenantAPIView):
    @extend_schema(
        summary="LangGraph store: run a batch of operations (BaseStore.batch)",
        request=StoreBatchInput,
        responses={200: StoreBatchOut, **error_responses(400)},
    )
    def post(self, request: TenantRequest) -> Response:
        ops = validated(StoreBatchInput, request.data)["ops"]
        return Response({"results": services.memory_batch(tenant=request.tenant, ops=ops)})
