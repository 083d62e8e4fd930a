"""The store's endpoint, /api/v1/store/batch/: one request per ``BaseStore.batch`` call; and the
search of a user's memories, /api/v1/users/{user_id}/memories/search/."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from agentstate.api import people
from agentstate.api.pagination import SearchPageQuery, search_page
from agentstate.api.schema import error_responses
from agentstate.api.serializers import Output, StrictInput, StringField, validated
from agentstate.api.views import TenantAPIView, TenantRequest
from agentstate.search import search_memories
from userdata_app.memory import selectors, services


class StoreBatchInput(StrictInput):
    ops = serializers.ListField(
        child=serializers.JSONField(),
        help_text='Operations run in one transaction: {"op": "get", namespace, key, refresh_ttl, with_sources}, '
        '{"op": "put", namespace, key, value (object, or null to delete), ttl (minutes or null), only_if, '
        "sources ([{session_id, app_name, ref} or {thread_id, ref}]: what the item was made from, added to "
        "its own; deleting such a session here deletes the items made only from it)}, "
        '{"op": "forget", namespace, key, ttl} (a live item\'s value becomes {"forgotten": true}), '
        '{"op": "search", namespace_prefix, filter, limit, offset, query, refresh_ttl, with_sources}, '
        '{"op": "list_namespaces", prefix, suffix, max_depth, limit, offset}. A stored item\'s '
        'namespace must start with ["users", "<user_id>"], or a put names the position of the label that '
        'is its person\'s user id (owner: 1 for ["memories", "<user_id>"]).',
    )
    user_id = StringField(
        required=False,
        help_text="Confine the batch to this person: every namespace and prefix within "
        '["users", "<user_id>"], searches and listings of every person narrowed to them (a key scoped to '
        "one person always means its own).",
    )


class StoreBatchOut(serializers.Serializer):
    results = serializers.ListField(
        child=serializers.JSONField(allow_null=True),
        help_text="One per operation, in order: an item or null (get), a list of items (search; an item "
        "read with_sources carries its sources, [] for none), a list "
        "of namespaces (list_namespaces), null (put, forget).",
    )


class StoreBatchView(TenantAPIView):
    reads = ("memories",)
    person_named_in = (people.BODY,)

    @extend_schema(
        summary="LangGraph store: run a batch of operations (BaseStore.batch)",
        request=StoreBatchInput,
        responses={200: StoreBatchOut, **error_responses(400)},
    )
    def post(self, request: TenantRequest) -> Response:
        data = validated(StoreBatchInput, request.data)
        return Response({"results": services.memory_batch(tenant=request.tenant, **data)})


class MemorySearchQuery(SearchPageQuery):
    q = serializers.CharField(
        trim_whitespace=False,
        help_text="Words, any of which a memory must hold (whole words, any case, no stemming): the items "
        "holding more of them, then rarer ones, come first.",
    )


class MemoryHitSerializer(Output):
    namespace = serializers.ListField(child=serializers.CharField())
    key = serializers.CharField()
    value = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    score = serializers.FloatField(
        help_text="How many of the query's words the item holds, plus under 1 for how rare they are; "
        "compare it only within one search."
    )


class MemorySearchPage(serializers.Serializer):
    next = serializers.URLField(allow_null=True)
    results = MemoryHitSerializer(many=True)


class MemorySearchView(TenantAPIView):
    reads = ("memories",)
    person_named_in = (people.PATH,)

    @extend_schema(
        summary="Search a user's memories",
        parameters=[MemorySearchQuery],
        responses={200: MemorySearchPage},
        description="Full-text search over the string values of the user's memory items (LangGraph's store), "
        'best match first (docs/API.md, "Search"); follow `next` for more.',
    )
    # No replica_reads: memories are user data, read on the primary only (docs/SCALING.md).
    def get(self, request: TenantRequest, user_id: str) -> Response:
        query = validated(MemorySearchQuery, request.query_params)

        def find(limit: int, offset: int) -> list[dict]:
            hits = search_memories(request.tenant, user_id, query["q"], limit=limit, offset=offset)
            return [{**selectors.item_data(hit.item), "score": hit.score} for hit in hits]

        return Response(MemorySearchPage(search_page(request, query, find)).data)
