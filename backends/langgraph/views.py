"""REST endpoints of the LangGraph checkpointer under /api/v1/langgraph/: thin views over
backends.langgraph.process's services and selectors. Identifiers travel in bodies and query strings,
never in paths, so any LangGraph id (with ``/``, any length) fits. The reads answer JSON, or msgpack
with the serialized bytes as they are when the caller asks for it (``Accept: application/msgpack``);
the writes take JSON (bytes in base64) or msgpack (``Content-Type: application/msgpack``, bytes as
they are). A checkpoint's channel values travel apart from it, each channel's at its version: a put
sends the channels it changed, a read answers the ones the checkpoint names."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import ormsgpack
from django.conf import settings
from django.db.models import Expression
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import exceptions, parsers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agentstate.api import people
from agentstate.api.errors import exception_handler
from agentstate.api.pagination import ModelsPagination
from agentstate.api.parsers import JSONParser, PayloadTooLarge
from agentstate.api.renderers import MSGPACK_BIG_INT, JSONRenderer, MsgpackRenderer
from agentstate.api.schema import error_responses
from agentstate.api.serializers import JSONTextField, PassedOn, StrictInput, StringField, validated
from agentstate.api.views import TenantAPIView, TenantRequest
from agentstate.exceptions import InvalidInput, NotFound
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_json
from backends.langgraph.process import selectors, services
from backends.langgraph.process.models import LangGraphCheckpoint

LANGGRAPH_CONFLICTS = ("thread_owned_by_another_user", "subject_erased")  # a write to a thread


def _text(**kwargs: Any) -> StringField:
    """An identifier exactly as sent: blank allowed (the root namespace), no whitespace trimmed."""
    return StringField(allow_blank=True, **kwargs)


class MsgpackParser(parsers.BaseParser):
    """A msgpack body (the saver's writes): bytes as msgpack's binary, no base64. The body limit
    of the JSON parser holds; a body that is not msgpack is a 400."""

    media_type = "application/msgpack"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(body) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        try:
            return ormsgpack.unpackb(body, ext_hook=_big_int)
        except (ValueError, TypeError) as exc:  # msgpack's decode errors, an unknown extension
            raise exceptions.ParseError(f"The body is not msgpack: {exc}") from None


def _big_int(code: int, data: bytes) -> int:
    """An integer past 64 bits, as the reads carry it (``MSGPACK_BIG_INT``: its decimal digits)."""
    if code != MSGPACK_BIG_INT:
        raise ValueError(f"unknown msgpack extension type {code}")
    return int(data)


WRITE_PARSERS = [JSONParser, MsgpackParser]


class TypedValueSerializer(serializers.Serializer):
    type = serializers.CharField(help_text="The serializer's type tag (msgpack, json, bytes, null, ...).")
    data = serializers.CharField(help_text="The serialized bytes: base64 in JSON, binary in msgpack.")  # type: ignore[assignment]  # an API field
    rendered = serializers.JSONField(
        required=False, allow_null=True, help_text="Ignored: earlier savers sent a JSON view; the server renders it."
    )


class ThreadWriteInput(StrictInput):
    """What every write names: the thread, its user (if any), the checkpoint."""

    thread_id = _text()
    user_id = StringField(required=False, allow_null=True, default=None, help_text='configurable["user_id"], if any.')
    default_user_id = StringField(help_text="Owns a new thread whose write names no user.")
    checkpoint_ns = _text()
    checkpoint_id = _text()


@extend_schema_field(
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "channel": {"type": "string"},
                "type": {"type": "string"},
                "data": {"type": "string", "format": "byte"},
            },
            "required": ["channel", "type", "data"],
        },
    }
)
class ChannelValuesField(PassedOn):
    """A list checked by ``services.checkpoint_put``."""


class CheckpointPutInput(ThreadWriteInput):
    parent_checkpoint_id = _text(allow_null=True, required=False, default=None)
    checkpoint = PassedOn(help_text="The checkpoint as the serializer wrote it, without the values sent apart.")
    metadata = serializers.JSONField()
    channel_versions = serializers.JSONField()
    channel_values = ChannelValuesField(
        required=False,
        default=(),
        help_text="The values of the channels this checkpoint changed, each stored at its channel's version "
        "(none: the checkpoint holds all its values, as savers from before this field send it).",
    )


@extend_schema_field(
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "idx": {"type": "integer"},
                "channel": {"type": "string"},
                "value": {
                    "type": "object",
                    "properties": {"type": {"type": "string"}, "data": {"type": "string", "format": "byte"}},
                    "required": ["type", "data"],
                },
            },
            "required": ["idx", "channel", "value"],
        },
        "example": [{"idx": 0, "channel": "messages", "value": {"type": "msgpack", "data": "kaJoaQ=="}}],
    }
)
class WritesField(PassedOn):
    """A JSON list checked by ``services.writes_put`` (its messages name the write at fault)."""


class WritesPutInput(ThreadWriteInput):
    task_id = _text()
    task_path = _text(required=False, default="")
    replace = serializers.BooleanField(default=False, help_text="Overwrite on retry (LangGraph's special channels).")
    writes = WritesField(help_text="The task's writes, each its index, channel and serialized value.")


class StoredOut(serializers.Serializer):
    thread_id = serializers.CharField()
    checkpoint_ns = serializers.CharField()
    checkpoint_id = serializers.CharField()


SEPARATE = "separate"


class ReadQuery(serializers.Serializer):
    channel_values = serializers.ChoiceField(
        choices=[SEPARATE],
        required=False,
        help_text="`separate`: each checkpoint's channel values stored apart come apart (`channel_values`), as "
        "the saver asks. Absent: they are put back inside the checkpoint, as savers from before this field read "
        "it (saver_upgrade_required where its format cannot be put together: not msgpack).",
    )


OWNER_HELP = "Only this user's threads (a key scoped to one person always means its own)."


class CheckpointQuery(ReadQuery):
    user_id = StringField(required=False, help_text=OWNER_HELP)
    thread_id = _text()
    checkpoint_ns = _text(required=False, default="")
    checkpoint_id = _text(required=False)


class ListQuery(ReadQuery):
    user_id = StringField(required=False, help_text=OWNER_HELP)
    thread_id = _text(required=False)
    checkpoint_ns = _text(required=False, help_text="Absent: every namespace.")
    checkpoint_id = _text(
        required=False, help_text="Only this checkpoint (a config naming one, as LangGraph lists it)."
    )
    before = _text(required=False, help_text="Only checkpoints with a smaller (older) id.")
    filter = JSONTextField(
        required=False, allow_blank=True, help_text="JSON object: metadata keys and the values they must equal."
    )


class WriteOut(serializers.Serializer):
    task_id = serializers.CharField()
    task_path = serializers.CharField()
    idx = serializers.IntegerField()
    channel = serializers.CharField()
    value = TypedValueSerializer()


class ChannelValueOut(serializers.Serializer):
    channel = serializers.CharField()
    version = serializers.CharField(help_text="The channel's version this value is (as channel_versions names it).")
    value = TypedValueSerializer(
        allow_null=True,
        help_text="null in a page: the value given earlier in the same page for this thread, namespace, channel "
        "and version (each value is carried once a page).",
    )


class CheckpointTupleOut(serializers.Serializer):
    thread_id = serializers.CharField()
    checkpoint_ns = serializers.CharField()
    checkpoint_id = serializers.CharField()
    parent_checkpoint_id = serializers.CharField(allow_null=True)
    metadata = serializers.JSONField()
    checkpoint = TypedValueSerializer(help_text="Without the channel values stored apart (channel_values).")
    channel_values = ChannelValueOut(many=True, help_text="The values of the channels it names, at their versions.")
    pending_writes = WriteOut(many=True)


class CheckpointPage(serializers.Serializer):
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = CheckpointTupleOut(many=True)


OF_USER = "Only if the thread is this user's (a key scoped to one person always means its own)."


class ThreadInput(StrictInput):
    thread_id = _text()
    user_id = StringField(required=False, help_text=OF_USER)


class CopyInput(StrictInput):
    source_thread_id = _text()
    target_thread_id = _text()
    user_id = StringField(required=False, help_text=OF_USER)


class PruneInput(StrictInput):
    thread_ids = serializers.ListField(child=_text(), allow_empty=True)
    strategy = StringField(default="keep_latest")
    user_id = StringField(required=False, help_text="Only this user's threads (a person key: its own).")


class RunsInput(StrictInput):
    run_ids = serializers.ListField(child=_text(), allow_empty=True)
    user_id = StringField(required=False, help_text="Only this user's checkpoints (a person key: its own).")


class CountOut(serializers.Serializer):
    count = serializers.IntegerField()


def _b64(data) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _tuple_data(item: selectors.CheckpointTuple, *, binary: bool, separate: bool, sent: set[int] | None = None) -> dict:
    """A checkpoint with its channel values (apart when ``separate``, else back inside it) and
    its pending writes; their bytes in base64 for JSON, as they are for msgpack. ``sent``: the
    values a page gave already (their pks), each sent once a page (null where it repeats)."""
    encoded: Callable[[Any], Any] = bytes if binary else _b64
    c = item.checkpoint
    value, blobs = (
        (c.value, item.blobs) if separate else (services.checkpoint_whole(c.value_type, c.value, item.blobs), [])
    )
    return {
        "thread_id": item.thread_id,
        "checkpoint_ns": c.checkpoint_ns,
        "checkpoint_id": c.checkpoint_id,
        "parent_checkpoint_id": c.parent_checkpoint_id,
        "metadata": c.metadata,
        "checkpoint": {"type": c.value_type, "data": encoded(value)},
        "channel_values": _channel_values(blobs, encoded, set() if sent is None else sent),
        "pending_writes": [
            {
                "task_id": w.task_id,
                "task_path": w.task_path,
                "idx": w.idx,
                "channel": w.channel,
                "value": {"type": w.value_type, "data": encoded(w.value)},
            }
            for w in item.writes
        ],
    }


def _channel_values(blobs: list[Any], encoded: Callable[[Any], Any], sent: set[int]) -> list[dict[str, Any]]:
    """A checkpoint's channel values, each with its version; a value ``sent`` names (by pk) as null,
    and those given here added to it."""
    found = []
    for b in blobs:
        repeated = b.pk is not None and b.pk in sent
        if b.pk is not None:
            sent.add(b.pk)
        value = None if repeated else {"type": b.value_type, "data": encoded(b.value)}
        found.append({"channel": b.channel, "version": b.version, "value": value})
    return found


class CheckpointPagination(ModelsPagination):
    """Newest first: LangGraph's checkpoint ids grow with time. A page ends early once its
    checkpoints, the channel values they name (each once: a value a checkpoint shares with its parent
    is counted there) and their pending writes hold ``PAGE_MAX_BYTES``. The page's values are
    counted here but read with its writes, in binary (``selectors.checkpoint_tuples``)."""

    ordering = "-checkpoint_id"
    large = ("metadata",)

    def size(self) -> Expression:
        return selectors.checkpoint_page_size()


def _checkpoint_write(body: Any) -> tuple[services.ThreadWrite, dict[str, Any]]:
    """A checkpoint put's body checked: what to store, and the answer once stored."""
    data = validated(CheckpointPutInput, body)
    answer = {name: data[name] for name in ("thread_id", "checkpoint_ns", "checkpoint_id")}
    return services.checkpoint_write(**data), answer


def _writes_write(body: Any) -> tuple[services.ThreadWrite, dict[str, Any]]:
    """A writes put's body checked: what to store, and the answer once stored."""
    write = services.writes_write(**validated(WritesPutInput, body))
    return write, {"count": services.write_count(write)}


def _stored(tenant: Tenant, prepared: tuple[services.ThreadWrite, dict[str, Any]]) -> dict[str, Any]:
    write, answer = prepared
    services.thread_write(tenant=tenant, write=write)
    return answer


READ_FORMATS = (
    "JSON by default. With `Accept: application/msgpack` (or `?format=msgpack`) the same answer in msgpack, "
    "each `data` as binary rather than base64 and an integer past 64 bits as extension type 1 (its decimal "
    "digits in ASCII); an error is JSON either way."
)


class CheckpointReadView(TenantAPIView):
    """A view whose GET answers checkpoints: JSON, or msgpack when asked (``Accept:
    application/msgpack``), which carries their bytes without base64's third more and its decoding.
    An error is JSON whatever was asked, as every error of the API."""

    reads = ("langgraph_threads", "langgraph_checkpoints", "langgraph_writes", "langgraph_channel_values")

    def get_renderers(self) -> list[Any]:
        renderers = super().get_renderers()
        return [*renderers, MsgpackRenderer()] if self.request.method == "GET" else renderers

    @staticmethod
    def binary(request: Request) -> bool:
        return isinstance(request.accepted_renderer, MsgpackRenderer)

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        if response.status_code >= 400 and isinstance(getattr(request, "accepted_renderer", None), MsgpackRenderer):
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)


class CheckpointListView(CheckpointReadView):
    person_named_in = (people.QUERY, people.BODY)
    parser_classes = WRITE_PARSERS
    pagination_class = CheckpointPagination

    @extend_schema(
        summary="LangGraph: list checkpoints newest first (alist)",
        description=READ_FORMATS,
        parameters=[ListQuery],
        responses={200: CheckpointPage},
    )
    def get(self, request: TenantRequest) -> Response:
        query = validated(ListQuery, request.query_params)
        metadata_filter = selectors.clean_filter(query.get("filter"))
        chosen = {name: query.get(name) for name in ("checkpoint_ns", "checkpoint_id", "before", "user_id")}
        paginator = self.pagination_class()
        position = paginator.forward_position(request, LangGraphCheckpoint)
        tuples: list[selectors.CheckpointTuple]
        if (
            query.get("thread_id") is None
            or metadata_filter
            or (paginator.cursor_query_param in request.query_params and position is None)
        ):
            rows = selectors.checkpoint_list(
                tenant=request.tenant, thread_id=query.get("thread_id"), metadata_filter=metadata_filter, **chosen
            ).defer("channel_versions", "value")  # the first not in the answer, the second read with the writes
            page = paginator.paginate_queryset(rows, request, view=self)
            tuples = selectors.checkpoint_tuples(page or [], thread_id=query.get("thread_id"))
        else:  # a thread's first page or next one (what get_state_history reads): one written-out statement
            fetch = selectors.checkpoint_first_page(
                tenant=request.tenant, thread_id=query["thread_id"], cursor=position, **chosen
            )
            tuples = paginator.paginate_first_page(fetch, request, position=position)
        binary, separate, sent = self.binary(request), query.get("channel_values") == SEPARATE, set[int]()
        return paginator.get_paginated_response(
            [_tuple_data(t, binary=binary, separate=separate, sent=sent) for t in tuples]
        )

    @extend_schema(
        summary="LangGraph: store a checkpoint (aput)",
        request=CheckpointPutInput,
        responses={201: StoredOut, **error_responses(409, conflicts=LANGGRAPH_CONFLICTS)},
    )
    def post(self, request: TenantRequest) -> Response:
        return Response(_stored(request.tenant, _checkpoint_write(request.data)), status=status.HTTP_201_CREATED)


class CheckpointDetailView(CheckpointReadView):
    person_named_in = (people.QUERY,)

    @extend_schema(
        summary="LangGraph: one checkpoint with its pending writes, or the newest (aget_tuple)",
        description=READ_FORMATS,
        parameters=[CheckpointQuery],
        responses={200: CheckpointTupleOut, **error_responses(404)},
    )
    def get(self, request: TenantRequest) -> Response:
        query = validated(CheckpointQuery, request.query_params)
        separate = query.pop("channel_values", None) == SEPARATE
        found = selectors.checkpoint_tuple_get(tenant=request.tenant, **query)
        if found is None:
            raise NotFound("No such checkpoint.")
        return Response(_tuple_data(found, binary=self.binary(request), separate=separate))


class WritesView(TenantAPIView):
    person_named_in = (people.BODY,)
    parser_classes = WRITE_PARSERS
    reads = ()

    @extend_schema(
        summary="LangGraph: store a task's pending writes (aput_writes)",
        request=WritesPutInput,
        responses={201: CountOut, **error_responses(409, conflicts=LANGGRAPH_CONFLICTS)},
    )
    def post(self, request: TenantRequest) -> Response:
        return Response(_stored(request.tenant, _writes_write(request.data)), status=status.HTTP_201_CREATED)


BATCHED_WRITES: dict[str, Callable[[Any], tuple[services.ThreadWrite, dict[str, Any]]]] = {
    "checkpoints": _checkpoint_write,
    "writes": _writes_write,
}
MAX_BATCH_CALLS = 64


class BatchCallInput(StrictInput):
    path = serializers.ChoiceField(choices=sorted(BATCHED_WRITES), help_text="The endpoint the call would go to.")
    body = PassedOn(help_text="The body it would send.")

    def validate_body(self, value: Any) -> Any:
        """A malformed document (overflow, lone surrogate, too deep) refuses the whole batch, as
        any body; what the call's own endpoint would refuse is that call's answer. Bytes (a msgpack
        body's values) are checked by the call's endpoint."""
        try:
            clean_json(value, field="body", require_object=True, binary=True)
        except InvalidInput as exc:
            raise serializers.ValidationError(exc.fields["body"]) from None
        return value


class CheckpointBatchInput(StrictInput):
    calls = serializers.ListField(child=BatchCallInput(), allow_empty=False, max_length=MAX_BATCH_CALLS)


class BatchResultOut(serializers.Serializer):
    status = serializers.IntegerField(help_text="The status the call alone would have had.")
    body = serializers.JSONField(help_text="The answer it alone would have had.")


class CheckpointBatchOut(serializers.Serializer):
    results = BatchResultOut(many=True)


class BatchView(TenantAPIView):
    person_named_in = ("body.calls.*.body",)
    parser_classes = WRITE_PARSERS
    reads = ()

    @extend_schema(
        summary="LangGraph: several checkpoint and writes puts in one request (the saver's group commit)",
        request=CheckpointBatchInput,
        responses={200: CheckpointBatchOut},
        description="Each call runs in order as if sent alone, and gets the status and answer it would have had: "
        "one refused call leaves the others stored. The saver sends the writes made while its previous request "
        "was in flight this way; consecutive calls to one thread are stored together when none is refused.",
    )
    def post(self, request: TenantRequest) -> Response:
        results: list[dict[str, Any] | None] = []
        checked: list[tuple[int, services.ThreadWrite, dict[str, Any]]] = []
        for call in validated(CheckpointBatchInput, request.data)["calls"]:
            try:
                write, answer = BATCHED_WRITES[call["path"]](call["body"])
            except Exception as exc:
                results.append(self._refused(exc))
            else:
                checked.append((len(results), write, answer))
                results.append(None)
        refusals = services.thread_writes_store(tenant=request.tenant, writes=[write for _, write, _ in checked])
        for (at, _, answer), refusal in zip(checked, refusals, strict=True):
            created = {"status": status.HTTP_201_CREATED, "body": answer}
            results[at] = created if refusal is None else self._refused(refusal)
        return Response({"results": results})

    def _refused(self, exc: Exception) -> dict[str, Any]:
        """A call's error answered as the call alone would be; a server fault still fails the batch."""
        refused = exception_handler(exc, self.get_exception_handler_context())
        if refused is None:
            raise exc
        return {"status": refused.status_code, "body": refused.data}


class ThreadDeleteView(TenantAPIView):
    person_named_in = (people.BODY,)
    reads = ()

    @extend_schema(
        summary="LangGraph: delete a thread with its checkpoints and writes (adelete_thread)",
        request=ThreadInput,
        responses={204: None},
    )
    def post(self, request: TenantRequest) -> Response:
        services.thread_delete(tenant=request.tenant, **validated(ThreadInput, request.data))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ThreadCopyView(TenantAPIView):
    person_named_in = (people.BODY,)
    reads = ()

    @extend_schema(
        summary="LangGraph: copy a thread's checkpoints and writes to another (acopy_thread)",
        request=CopyInput,
        responses={200: CountOut, **error_responses(409, conflicts=LANGGRAPH_CONFLICTS)},
    )
    def post(self, request: TenantRequest) -> Response:
        return Response({"count": services.thread_copy(tenant=request.tenant, **validated(CopyInput, request.data))})


class PruneView(TenantAPIView):
    person_named_in = (people.BODY,)
    reads = ()

    @extend_schema(
        summary="LangGraph: prune threads, keep_latest or delete (aprune)",
        request=PruneInput,
        responses={200: CountOut},
    )
    def post(self, request: TenantRequest) -> Response:
        return Response({"count": services.threads_prune(tenant=request.tenant, **validated(PruneInput, request.data))})


class RunsDeleteView(TenantAPIView):
    person_named_in = (people.BODY,)
    reads = ()

    @extend_schema(
        summary="LangGraph: delete the checkpoints and writes of runs (adelete_for_runs)",
        request=RunsInput,
        responses={200: CountOut},
    )
    def post(self, request: TenantRequest) -> Response:
        return Response({"count": services.runs_delete(tenant=request.tenant, **validated(RunsInput, request.data))})
