"""REST endpoints of process state: thin views over sessions_app.services and selectors.

Each view checks the request's shape, calls one service or selector with the caller's tenant, and
shapes the answer; no rule lives here. Sessions and rounds carry an ETag (their version) and honour
If-Match through the services' compare-and-set.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from agentstate import streaming
from agentstate.api import etags, json_rows, people
from agentstate.api.pagination import (
    InsertionPagination,
    RoundPagination,
    RunUsagePagination,
    SeqPagination,
    SessionPagination,
    TransitionPagination,
    search_page,
)
from agentstate.api.schema import error_responses
from agentstate.api.serializers import validated
from agentstate.api.views import TenantAPIView, TenantRequest
from agentstate.db_router.router import replica_reads
from agentstate.exceptions import NotFound, PreconditionFailed
from sessions_app import selectors, services
from sessions_app.api import serializers as s
from sessions_app.api.filters import SessionFilter
from sessions_app.models import Session

IF_MATCH = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description='The ETag you read (e.g. "3"): the write happens only if nobody changed it since (else 412).',
)

HISTORY_GENERATION = "X-History-Generation"

ROUND_ID = OpenApiParameter("round_id", int, OpenApiParameter.PATH, description="0..2147483647")


def session_if_match(request: Request) -> int | None:
    """The session version named by If-Match; ``*`` asks nothing more than that it exists."""
    expected = etags.if_match_version(request)
    return None if expected == etags.ANY else expected


class SessionScopedView(TenantAPIView):
    """A view under ``users/{user_id}/sessions/{session_id}/``."""

    person_named_in = (people.PATH,)

    def get_session(self) -> Session:
        return selectors.session_get(
            tenant=self.request.tenant, user_id=self.kwargs["user_id"], session_id=self.kwargs["session_id"]
        )


# --- Sessions -----------------------------------------------------------------------------


class SessionListView(TenantAPIView, generics.GenericAPIView):
    reads = ("sessions",)
    person_named_in = (people.QUERY, people.BODY)
    serializer_class = s.SessionSerializer
    pagination_class = SessionPagination
    filter_backends = [DjangoFilterBackend]
    filterset_class = SessionFilter

    def get_queryset(self) -> QuerySet[Session]:
        if getattr(self, "swagger_fake_view", False):  # schema generation: no request tenant
            return Session.objects.none()
        return selectors.session_list(tenant=self.request.tenant)

    @extend_schema(summary="List sessions (without messages)", responses={200: s.SessionSerializer(many=True)})
    @replica_reads  # a listing tolerates lag (docs/SCALING.md)
    def get(self, request: TenantRequest) -> Response:
        return self.paginated_rows(self.filter_queryset(self.get_queryset()), serializer_class=s.SessionSerializer)

    @extend_schema(
        summary="Create a session",
        request=s.SessionCreateInput,
        responses={201: s.SessionSerializer, **error_responses(409)},
    )
    def post(self, request: TenantRequest) -> Response:
        session = services.session_create(tenant=request.tenant, **validated(s.SessionCreateInput, request.data))
        return etags.with_etag(
            Response(s.SessionSerializer(session).data, status=status.HTTP_201_CREATED), session.version
        )


class SessionDetailView(SessionScopedView):
    reads = ("sessions",)

    @extend_schema(summary="Get a session", responses={200: s.SessionSerializer})
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        session = self.get_session()
        return etags.with_etag(Response(s.SessionSerializer(session).data), session.version)

    @extend_schema(
        summary="Change a session's agent, workspace or metadata",
        parameters=[IF_MATCH],
        request=s.SessionUpdateInput,
        responses={200: s.SessionSerializer, **error_responses(412)},
    )
    def patch(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        changes = validated(s.SessionUpdateInput, request.data)
        session = services.session_update(
            session=self.get_session(), expected_version=session_if_match(request), **changes
        )
        return etags.with_etag(Response(s.SessionSerializer(session).data), session.version)

    @extend_schema(
        summary="Delete a session with its history, rounds, checkpoints, transitions, working state",
        parameters=[IF_MATCH],
        responses={204: None, **error_responses(412)},
    )
    def delete(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        services.session_delete(session=self.get_session(), expected_version=session_if_match(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionEndView(SessionScopedView):
    reads = ("sessions",)
    body_required = False

    @extend_schema(
        summary="End a session (its working state is discarded)",
        request=None,
        parameters=[IF_MATCH],
        responses={200: s.SessionSerializer, **error_responses(412)},
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        session = services.session_end(session=self.get_session(), expected_version=session_if_match(request))
        return etags.with_etag(Response(s.SessionSerializer(session).data), session.version)


class SessionRestoreView(SessionScopedView):
    reads = ("sessions", "checkpoints", "working_state")

    @extend_schema(
        summary="What survives a session: its checkpoints and live working state",
        responses={200: s.RestoreSerializer},
        description="Streamed as it is read: a session's checkpoints may hold more than a page may.",
    )
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> StreamingHttpResponse:
        restored = selectors.session_restore(tenant=request.tenant, user_id=user_id, session_id=session_id)
        return streaming.json_response(
            {
                "session": s.SessionSerializer(restored.session).data,
                "checkpoints": (s.CheckpointSerializer(c).data for c in restored.checkpoints),
                "working_state": restored.working_state,
            }
        )


# --- Messages -----------------------------------------------------------------------------


class MessageListView(SessionScopedView):
    reads = ("messages",)
    pagination_class = SeqPagination

    @extend_schema(
        summary="Read the history",
        parameters=[s.MessageQuery],
        responses={200: s.MessageSerializer(many=True)},
        description="Pages in seq order (follow `next`: a page ends early once it holds AGENTSTATE_PAGE_MAX_BYTES); "
        "`recent=N` returns the last N as one page (the newest that fit that budget). "
        "`X-History-Generation` is the session's history generation: if it changes between pages, an "
        "edit removed messages and the history should be read again.",
    )
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        query = validated(s.MessageQuery, request.query_params)
        role = query.get("role")
        if "recent" in query:
            generation, recent = selectors.session_recent_rows(
                tenant=request.tenant,
                user_id=user_id,
                session_id=session_id,
                limit=query["recent"],
                role=role,
                serializer_class=s.MessageSerializer,
                max_bytes=settings.PAGE_MAX_BYTES,
            )
            response = Response({"next": None, "previous": None, "results": recent})
        elif self.pagination_class.cursor_query_param in request.query_params:
            session = self.get_session()
            generation = session.history_generation
            messages = selectors.message_list(session=session, after_seq=query.get("after_seq"), role=role)
            response = self.paginated_rows(messages, serializer_class=s.MessageSerializer)
        else:  # a first page: the session and the page read by a written-out statement
            paginator = self.pagination_class()
            rows = selectors.SessionMessageRows(
                tenant=request.tenant,
                user_id=user_id,
                session_id=session_id,
                after=query.get("after_seq"),
                role=role,
                serializer_class=s.MessageSerializer,
            )
            page = paginator.paginate_first_page(rows, request)
            response = paginator.get_paginated_response(json_rows.embedded(page))
            generation = rows.generation
        # A reader following after_seq or cursors compares it page to page: a change means an edit
        # (pop, rewind, clear) removed messages it may already hold.
        response[HISTORY_GENERATION] = str(generation)
        return response

    @extend_schema(
        summary="Append one message or a list, atomically",
        request=s.MessageAppendInput,
        responses={
            201: s.MessageAppendedSerializer,
            200: OpenApiResponse(s.MessageAppendedSerializer, description="Every message was a retry: nothing stored."),
            **error_responses(409),
        },
        description='Body `{"messages": [...]}`, or one message object as the whole body.',
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        body = request.data
        if not isinstance(body, dict):
            raise ValidationError({"messages": ['Send {"messages": [...]} or one message object.']})
        if "messages" in body:
            extra = sorted(set(body) - {"messages"})
            if extra:
                raise ValidationError({name: ["Unknown field."] for name in extra})
            messages = body["messages"]
        else:
            messages = [body]
        result = services.message_append_to(
            tenant=request.tenant, user_id=user_id, session_id=session_id, messages=messages
        )
        return Response(
            s.MessageAppendedSerializer({"messages": result.messages}).data,
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )


class MessageSearchView(TenantAPIView):
    reads = ("messages",)
    person_named_in = (people.PATH,)

    @extend_schema(
        summary="Search a user's messages",
        parameters=[s.MessageSearchQuery],
        responses={200: s.MessageSearchPage},
        description="Full-text search over the content of every message in the user's sessions: the newest 1,000 "
        'matches, best match first (docs/API.md, "Search"). Each result names its session and seq; follow `next` '
        "for more.",
    )
    @replica_reads  # a listing tolerates lag (docs/SCALING.md)
    def get(self, request: TenantRequest, user_id: str) -> Response:
        query = validated(s.MessageSearchQuery, request.query_params)
        page = search_page(
            request,
            query,
            lambda limit, offset: selectors.message_search(
                tenant=request.tenant, user_id=user_id, query=query["q"], limit=limit, offset=offset
            ),
        )
        return Response(s.MessageSearchPage(page).data)


class MessagePopView(SessionScopedView):
    reads = ("messages",)
    body_required = False

    @extend_schema(
        summary="Pop the newest message (atomic; null when the history is empty)",
        request=s.MessagePopInput,
        responses={200: s.MessagePoppedSerializer, **error_responses(409, 412)},
        description="Concurrent pops each get a different message or null. With `idempotency_key`, a retry returns "
        "the first answer and pops nothing. The seq is never reused; `history_generation` advances.",
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        data = validated(s.MessagePopInput, request.data or {})
        popped = services.message_pop_from(tenant=request.tenant, user_id=user_id, session_id=session_id, **data)
        return Response(s.MessagePoppedSerializer({"message": popped}).data)


class MessageRewindView(SessionScopedView):
    reads = ()

    @extend_schema(
        summary="Remove every message after a seq (and, with after_round, every round after it)",
        request=s.MessageRewindInput,
        responses={200: s.HistoryEditSerializer, **error_responses(409, 412)},
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        edit = services.message_rewind(session=self.get_session(), **validated(s.MessageRewindInput, request.data))
        return Response(s.HistoryEditSerializer(edit).data)


class MessageClearView(SessionScopedView):
    reads = ()
    body_required = False

    @extend_schema(
        summary="Remove every message, keeping the session",
        request=s.MessageClearInput,
        responses={200: s.HistoryEditSerializer, **error_responses(409, 412)},
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        edit = services.message_clear(session=self.get_session(), **validated(s.MessageClearInput, request.data or {}))
        return Response(s.HistoryEditSerializer(edit).data)


class SessionForkView(SessionScopedView):
    reads = ("sessions",)
    body_required = False

    @extend_schema(
        summary="Copy the session up to a message and a round into a new session of the same user",
        request=s.SessionForkInput,
        responses={201: s.SessionSerializer, **error_responses(409, 412)},
        description="One transaction, a fixed number of statements whatever the size. The fork records where it "
        "came from (`forked_from`); an ended session can be forked.",
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        fork = services.session_fork(session=self.get_session(), **validated(s.SessionForkInput, request.data or {}))
        return etags.with_etag(Response(s.SessionSerializer(fork).data, status=status.HTTP_201_CREATED), fork.version)


# --- Rounds -------------------------------------------------------------------------------


def _round_response(round_, *, written: bool = False) -> Response:
    """A round with its ETag; a write answers 201 when it made the round (version 1), else 200."""
    code = status.HTTP_201_CREATED if written and round_.version == 1 else status.HTTP_200_OK
    return etags.with_etag(Response(s.RoundSerializer(round_).data, status=code), round_.version)


class RoundWriteMixin(TenantAPIView):
    def save_round(self, *, state: dict[str, Any], round_id: int | None) -> Response:
        kwargs = self.kwargs
        expected = etags.if_match_version(self.request)
        if expected == etags.ANY:  # any current version will do, but there must be one
            if round_id is None:
                raise PreconditionFailed("If-Match needs an existing round: give its round_id.")
            try:
                expected = selectors.round_get(
                    tenant=self.request.tenant,
                    user_id=kwargs["user_id"],
                    session_id=kwargs["session_id"],
                    round_id=round_id,
                ).version
            except NotFound:
                raise PreconditionFailed("If-Match: * needs an existing round.") from None
        round_ = services.round_save(
            tenant=self.request.tenant,
            user_id=kwargs["user_id"],
            session_id=kwargs["session_id"],
            state=state,
            round_id=round_id,
            expected_version=expected,
        )
        return _round_response(round_, written=True)


class RoundListView(RoundWriteMixin, SessionScopedView):
    reads = ("rounds",)
    pagination_class = RoundPagination

    @extend_schema(summary="List rounds (without their state)", responses={200: s.RoundSummarySerializer(many=True)})
    @replica_reads  # a listing tolerates lag (docs/SCALING.md)
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        return self.paginated(
            selectors.round_list(session=self.get_session()),
            serializer_class=s.RoundSummarySerializer,
        )

    @extend_schema(
        summary="Save a state snapshot (creates the session when missing)",
        parameters=[IF_MATCH],
        request=s.RoundSaveInput,
        responses={
            201: s.RoundSerializer,
            200: OpenApiResponse(s.RoundSerializer, description="An existing round_id was overwritten."),
            **error_responses(409, 412),
        },
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        data = validated(s.RoundSaveInput, request.data)
        return self.save_round(state=data["state"], round_id=data.get("round_id"))


class RoundLatestView(SessionScopedView):
    reads = ("rounds",)

    @extend_schema(summary="The round with the largest round_id", responses={200: s.RoundSerializer})
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        return _round_response(selectors.round_get(tenant=request.tenant, user_id=user_id, session_id=session_id))


class RoundDetailView(RoundWriteMixin, SessionScopedView):
    reads = ("rounds",)

    @extend_schema(summary="Get one round", parameters=[ROUND_ID], responses={200: s.RoundSerializer})
    def get(self, request: TenantRequest, user_id: str, session_id: str, round_id: int) -> Response:
        return _round_response(
            selectors.round_get(tenant=request.tenant, user_id=user_id, session_id=session_id, round_id=round_id)
        )

    @extend_schema(
        summary="Write one round (creates the session when missing)",
        parameters=[ROUND_ID, IF_MATCH],
        request=s.RoundPutInput,
        responses={
            200: s.RoundSerializer,
            201: OpenApiResponse(s.RoundSerializer, description="The round was new."),
            **error_responses(409, 412),
        },
    )
    def put(self, request: TenantRequest, user_id: str, session_id: str, round_id: int) -> Response:
        return self.save_round(state=validated(s.RoundPutInput, request.data)["state"], round_id=round_id)

    @extend_schema(summary="Delete one round", parameters=[ROUND_ID], responses={204: None})
    def delete(self, request: TenantRequest, user_id: str, session_id: str, round_id: int) -> Response:
        services.round_delete(session=self.get_session(), round_id=round_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- Checkpoints ----------------------------------------------------------------------------


class CheckpointListView(SessionScopedView):
    reads = ("checkpoints",)
    pagination_class = InsertionPagination

    @extend_schema(
        summary="List checkpoints (id, label, time)", responses={200: s.CheckpointSummarySerializer(many=True)}
    )
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        return self.paginated(
            selectors.checkpoint_list(session=self.get_session()),
            serializer_class=s.CheckpointSummarySerializer,
        )

    @extend_schema(
        summary="Promote working state (or a given state) to a labelled checkpoint",
        request=s.CheckpointCreateInput,
        responses={201: s.CheckpointSerializer},
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        data = validated(s.CheckpointCreateInput, request.data)
        checkpoint = services.checkpoint_create(session=self.get_session(), **data)
        return Response(s.CheckpointSerializer(checkpoint).data, status=status.HTTP_201_CREATED)


class CheckpointLatestView(SessionScopedView):
    reads = ("checkpoints",)

    @extend_schema(
        summary="The newest checkpoint with a label",
        parameters=[s.CheckpointQuery],
        responses={200: s.CheckpointSerializer},
    )
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        label = validated(s.CheckpointQuery, request.query_params)["label"]
        return Response(
            s.CheckpointSerializer(selectors.checkpoint_latest(session=self.get_session(), label=label)).data
        )


# --- Working state ----------------------------------------------------------------------------


class WorkingStateView(SessionScopedView):
    reads = ("working_state",)

    @extend_schema(summary="The session's working state ({} once ended)", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        return Response(selectors.working_state_get(session=self.get_session()))

    @extend_schema(
        summary="Replace the working state",
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, **error_responses(409)},
    )
    def put(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        return Response(services.working_state_replace(session=self.get_session(), data=request.data))

    @extend_schema(
        summary="Merge top-level keys (null removes a key)",
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, **error_responses(409)},
    )
    def patch(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        return Response(services.working_state_patch(session=self.get_session(), changes=request.data))

    @extend_schema(summary="Clear the working state", responses={204: None})
    def delete(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        services.working_state_clear(session=self.get_session())
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- Transitions ----------------------------------------------------------------------------


class TransitionListView(SessionScopedView):
    reads = ("transitions",)
    pagination_class = TransitionPagination

    @extend_schema(summary="List agent hand-offs", responses={200: s.TransitionSerializer(many=True)})
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        return self.paginated(
            selectors.transition_list(session=self.get_session()),
            serializer_class=s.TransitionSerializer,
        )

    @extend_schema(
        summary="Record a hand-off between agents",
        request=s.TransitionInput,
        responses={201: s.TransitionSerializer, **error_responses(409)},
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        data = validated(s.TransitionInput, request.data)
        transition = services.transition_record(session=self.get_session(), **data)
        return Response(s.TransitionSerializer(transition).data, status=status.HTTP_201_CREATED)


# --- Usage ------------------------------------------------------------------------------------


class RunUsageListView(SessionScopedView):
    reads = ("run_usage",)
    pagination_class = RunUsagePagination

    @extend_schema(summary="List model usage per turn", responses={200: s.RunUsageSerializer(many=True)})
    def get(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        return self.paginated(
            selectors.run_usage_list(session=self.get_session()), serializer_class=s.RunUsageSerializer
        )

    @extend_schema(
        summary="Store one turn's model usage (replacing what that turn had)",
        request=s.RunUsageInput,
        responses={201: s.RunUsageSerializer, **error_responses(409)},
    )
    def post(self, request: TenantRequest, user_id: str, session_id: str) -> Response:
        data = validated(s.RunUsageInput, request.data)
        usage = services.run_usage_record(session=self.get_session(), **data)
        return Response(s.RunUsageSerializer(usage).data, status=status.HTTP_201_CREATED)
