"""ADK's session service over HTTP (agentstate.integrations.adk is its client).

Each write is one request and one transaction: the session and app parts through
backends.adk.process, the ``user:`` part through backends.adk.people. Reads merge the three states and put
each event's ``user:`` delta back, so an event reads back as ADK wrote it until the user's data is
erased. Events are sent as the stored JSON text, never re-encoded, in pages of
``EVENT_PAGE_SIZE`` events that end early at ``settings.PAGE_MAX_BYTES``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar

from django.conf import settings
from django.db import transaction
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from agentstate.api import people
from agentstate.api.renderers import JSONRenderer
from agentstate.api.schema import error_responses
from agentstate.api.serializers import validated
from agentstate.api.views import TenantAPIView, TenantRequest
from agentstate.validation import clean_identifier
from backends.adk import serializers as s
from backends.adk.people import selectors as user_selectors
from backends.adk.people import services as user_services
from backends.adk.process import selectors, services
from backends.adk.process.state import USER_PREFIX, json_object, json_text, state_merge
from sessions_app import services as session_services
from sessions_app.models import Session


class AdkView(TenantAPIView):
    """A view under ``adk/apps/{app_name}/``."""

    person_named_in: ClassVar[tuple[str, ...] | None] = (people.PATH,)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.kwargs["app_name"] = clean_identifier(self.kwargs["app_name"], field="app_name")

    def get_session(self) -> Session:
        return selectors.adk_session_get(
            tenant=self.request.tenant,
            app_name=self.kwargs["app_name"],
            user_id=self.kwargs["user_id"],
            session_id=self.kwargs["session_id"],
        )


def _session_document(session: Session, *, app_state: dict[str, Any], user_state: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": session.session_id,
        "app_name": session.app_name,
        "user_id": session.user_id,
        "state": state_merge(app=app_state, user=user_state, session=json_object(session.durable_state)),
        "last_update_time": session.last_update_time,
        "version": session.version,
    }


def _events_json(session: Session, events: list[tuple[int, str]]) -> tuple[str, int]:
    """The events as a JSON array of the stored texts, each with its user: delta put back, and how
    many had one."""
    if not events:
        return "[]", 0
    deltas = user_selectors.adk_event_user_deltas(session_pk=session.pk, first_seq=events[0][0], last_seq=events[-1][0])
    texts = []
    for seq, text in events:
        if seq in deltas:
            event = json.loads(text)
            event.setdefault("actions", {}).setdefault("state_delta", {}).update(
                {USER_PREFIX + key: value for key, value in deltas[seq].items()}
            )
            text = json_text(event)
        texts.append(text)
    return "[" + ",".join(texts) + "]", len(deltas)


_RENDERER = JSONRenderer()


def _json_response(document: dict[str, Any], *, events: str, status_code: int = 200) -> HttpResponse:
    """``document`` with the already-encoded ``events`` array spliced in (no re-encoding). Encoded as
    every answer is: a NaN or infinity stored in state before they were refused is written null."""
    head = _RENDERER.render(document).decode()
    return HttpResponse(f'{head[:-1]},"events":{events}}}', status=status_code, content_type="application/json")


def _cursor(cursor: selectors.EventCursor | None) -> str | None:
    return None if cursor is None else cursor.encode()


class SessionListView(AdkView):
    reads = ("sessions", "adk_user_state")
    person_named_in = (people.QUERY,)

    @extend_schema(
        summary="ADK: an app's sessions (one user's or all), oldest update first, without events",
        parameters=[s.AdkSessionListQuery],
        responses={200: s.AdkSessionListOutput},
    )
    def get(self, request: TenantRequest, app_name: str) -> Response:
        query = validated(s.AdkSessionListQuery, request.query_params)
        page = selectors.adk_session_list(
            tenant=request.tenant, app_name=app_name, max_bytes=settings.PAGE_MAX_BYTES, **query
        )
        app_state, user_states = user_selectors.adk_app_and_user_states(
            tenant=request.tenant, app_name=app_name, user_ids=[session.user_id for session in page.sessions]
        )
        sessions = [
            {
                **_session_document(session, app_state=app_state, user_state=user_states.get(session.user_id, {})),
                "events": [],
                "events_next": None,
            }
            for session in page.sessions
        ]
        return Response({"sessions": sessions, "next": page.next})


class SessionCreateView(AdkView):
    reads = ("sessions", "adk_user_state")

    @extend_schema(
        summary="ADK: create a session (initial state split into session, app: and user: state)",
        request=s.AdkSessionCreateInput,
        responses={201: s.AdkSessionOutput, **error_responses(409)},
    )
    def post(self, request: TenantRequest, app_name: str, user_id: str) -> HttpResponse:
        data = validated(s.AdkSessionCreateInput, request.data)
        with services.adk_session_create_transaction(data["state"]):
            created = services.adk_session_create(
                tenant=request.tenant,
                app_name=app_name,
                user_id=user_id,
                session_id=data.get("session_id"),
                state=data["state"],
                columns=user_selectors.ADK_STATES_COLUMNS,  # read by the insert, as it left them
            )
            if created.user_delta:
                user_services.adk_user_state_update(
                    tenant=request.tenant, app_name=app_name, user_id=user_id, delta=created.user_delta
                )
        if created.extra is not None:
            app_state, user_state = user_selectors.adk_states_of(created.extra)
        else:
            app_state, user_state = user_selectors.adk_states_get(
                tenant=request.tenant, app_name=app_name, user_id=user_id
            )
        document = _session_document(created.session, app_state=app_state, user_state=user_state)
        return _json_response({**document, "events_next": None}, events="[]", status_code=status.HTTP_201_CREATED)


class SessionDetailView(AdkView):
    reads = ("sessions", "adk_events", "adk_user_state")

    @extend_schema(
        summary="ADK: get a session with its events (GetSessionConfig's window, first page)",
        parameters=[s.AdkGetSessionQuery],
        responses={200: s.AdkSessionOutput},
    )
    def get(self, request: TenantRequest, app_name: str, user_id: str, session_id: str) -> HttpResponse:
        query = validated(s.AdkGetSessionQuery, request.query_params)
        held = selectors.HeldEvents.decode(query.pop("held")) if "held" in query else None
        read = user_selectors.adk_session_read(
            tenant=request.tenant,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            count_deltas=not query,
            through_seq=held.last_seq if held is not None else None,
        )
        session = read.session
        document = _session_document(session, app_state=read.app_state, user_state=read.user_state)
        if query:  # GetSessionConfig's window: no token, a window is not the whole session
            window = selectors.adk_event_window(session=session, **query)
            page = (
                selectors.adk_event_page(
                    session=session,
                    cursor=window,
                    page_size=selectors.EVENT_PAGE_SIZE,
                    max_bytes=settings.PAGE_MAX_BYTES,
                )
                if window is not None
                else selectors.EventPage(events=[], next=None)
            )
            events, _ = _events_json(session, page.events)
            return _json_response({**document, "events_next": _cursor(page.next)}, events=events)
        assert read.user_deltas is not None  # noqa: S101 (counted for a whole read)
        if held is not None and held.still_held(session, user_deltas=read.user_deltas):
            return self._events_after(session, document, held)
        if held is not None:  # counted through the held events: count them all
            read = user_selectors.adk_session_read(
                tenant=request.tenant, app_name=app_name, user_id=user_id, session_id=session_id, count_deltas=True
            )
            session = read.session
            document = _session_document(session, app_state=read.app_state, user_state=read.user_state)
        return self._whole(session, document, user_deltas=read.user_deltas or 0)

    def _whole(self, session: Session, document: dict[str, Any], *, user_deltas: int) -> HttpResponse:
        """Every event (the first page of them) and the token of what the reader then holds."""
        token = selectors.HeldEvents(
            session_pk=session.pk,
            history_generation=session.history_generation,
            last_seq=session.last_seq,
            user_deltas=user_deltas,
        )
        page = selectors.adk_event_page(
            session=session,
            cursor=selectors.EventCursor(timestamp=float("-inf"), seq=0, last_seq=session.last_seq),
            page_size=selectors.EVENT_PAGE_SIZE,
            max_bytes=settings.PAGE_MAX_BYTES,
        )
        events, _ = _events_json(session, page.events)
        answer = {**document, "events_next": _cursor(page.next), "events_token": token.encode(), "events_held": False}
        return _json_response(answer, events=events)

    def _events_after(self, session: Session, document: dict[str, Any], held: selectors.HeldEvents) -> HttpResponse:
        """The reader's events are still the session's: only those appended after them."""
        after = selectors.adk_events_after(
            session=session,
            after_seq=held.last_seq,
            page_size=selectors.EVENT_PAGE_SIZE,
            max_bytes=settings.PAGE_MAX_BYTES,
        )
        events, with_delta = _events_json(session, after.events)
        token = dataclasses.replace(held, last_seq=after.last_seq, user_deltas=held.user_deltas + with_delta)
        answer = {
            **document,
            "events_next": None,
            "events_token": token.encode(),
            "events_held": True,
            "events_more": after.last_seq < session.last_seq,
        }
        return _json_response(answer, events=events)

    @extend_schema(summary="ADK: delete a session and its events (user: state stays)", responses={204: None})
    def delete(self, request: TenantRequest, app_name: str, user_id: str, session_id: str) -> Response:
        session_services.session_delete(session=self.get_session())
        return Response(status=status.HTTP_204_NO_CONTENT)


class EventListView(AdkView):
    reads = ("adk_events", "adk_user_state")

    @extend_schema(
        summary="ADK: the next page of a session read's events",
        parameters=[s.AdkEventPageQuery],
        responses={200: s.AdkEventPageOutput},
    )
    def get(self, request: TenantRequest, app_name: str, user_id: str, session_id: str) -> HttpResponse:
        cursor = selectors.EventCursor.decode(validated(s.AdkEventPageQuery, request.query_params)["cursor"])
        session = self.get_session()
        page = selectors.adk_event_page(
            session=session, cursor=cursor, page_size=selectors.EVENT_PAGE_SIZE, max_bytes=settings.PAGE_MAX_BYTES
        )
        head = json.dumps({"next": _cursor(page.next)}, separators=(",", ":"))
        events, _ = _events_json(session, page.events)
        return HttpResponse(f'{head[:-1]},"events":{events}}}', content_type="application/json")

    @extend_schema(
        summary="ADK: append an event with its state delta (one transaction)",
        request=s.AdkEventAppendInput,
        responses={201: s.AdkEventAppendedOutput, **error_responses(409)},
        description="409 `stale_session`: reload the session first; `event_exists`: the session "
        "already holds an event with this id (ADK's own database and SQLite services refuse it too).",
    )
    def post(self, request: TenantRequest, app_name: str, user_id: str, session_id: str) -> Response:
        data = validated(s.AdkEventAppendInput, request.data)
        identity: dict[str, Any] = {
            "tenant": request.tenant,
            "app_name": app_name,
            "user_id": user_id,
            "session_id": session_id,
        }
        appended = None
        if data.get("expected_version") is not None:
            appended = services.adk_event_append_one_statement(
                **identity,
                event=data["event"],
                expected_version=data["expected_version"],
                last_update_time=data.get("last_update_time"),
            )
        if appended is None:
            with transaction.atomic():
                appended = services.adk_event_append(
                    **identity,
                    event=data["event"],
                    expected_version=data.get("expected_version"),
                    last_update_time=data.get("last_update_time"),
                    last_event_id=data.get("last_event_id"),
                )
                if appended.user_delta:
                    user_services.adk_user_state_update(
                        tenant=request.tenant,
                        app_name=app_name,
                        user_id=user_id,
                        delta=appended.user_delta,
                        session_pk=appended.session_pk,
                        event_seq=appended.seq,
                    )
        return Response(
            {"version": appended.version, "last_update_time": appended.last_update_time},
            status=status.HTTP_201_CREATED,
        )


class UserStateView(AdkView):
    reads = ("adk_user_state",)

    @extend_schema(
        summary="ADK: a user's user: state in the app (keys without the prefix)", responses={200: s.AdkStateOutput}
    )
    def get(self, request: TenantRequest, app_name: str, user_id: str) -> Response:
        return Response(
            {"state": user_selectors.adk_user_state_get(tenant=request.tenant, app_name=app_name, user_id=user_id)}
        )


class AppStateView(AdkView):
    reads = ()  # app: state is about no one
    person_named_in = people.NO_PERSON

    @extend_schema(summary="ADK: the app's app: state (keys without the prefix)", responses={200: s.AdkStateOutput})
    def get(self, request: TenantRequest, app_name: str) -> Response:
        return Response({"state": selectors.adk_app_state_get(tenant=request.tenant, app_name=app_name)})
