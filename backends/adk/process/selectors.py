"""Reads of ADK sessions: one session, a window of its events in pages, an app's sessions in
pages, an app's state. Every query is index-served and bounded by a page size, whatever the size
of the session or the app."""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q

from agentstate import streaming
from agentstate.api import json_rows
from agentstate.exceptions import InvalidInput, NotFound
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier
from backends.adk.process.models import AdkAppState, AdkEvent
from backends.adk.process.services import FRAMEWORK
from backends.adk.process.state import json_object
from sessions_app.models import Session
from sessions_app.selectors import session_get

EVENT_PAGE_SIZE = 1000
SESSION_PAGE_SIZE = 100
MAX_SESSION_PAGE_SIZE = 500
LISTED_FIELDS = ("user_id", "session_id", "app_name", "durable_state", "last_update_time", "version")


def adk_session_get(*, tenant: Tenant, app_name: str, user_id: str, session_id: str) -> Session:
    """One ADK session by ``(app_name, user_id, session_id)``; anything else is not found."""
    session = session_get(tenant=tenant, user_id=user_id, session_id=session_id, app_name=app_name)
    if session.framework != FRAMEWORK:
        raise NotFound("Session not found.")
    return session


@dataclass(frozen=True)
class EventCursor:
    """Where the next page of a read starts (timestamp, seq) and the last event the read covers,
    so events appended during a paged read do not join it."""

    timestamp: float
    seq: int
    last_seq: int

    def encode(self) -> str:
        return _cursor_encode([self.timestamp if math.isfinite(self.timestamp) else None, self.seq, self.last_seq])

    @classmethod
    def decode(cls, value: str) -> EventCursor:
        timestamp, seq, last_seq = _cursor_decode(value, (float, type(None)), int, int)
        if not all(0 <= n <= _BIGINT_MAX for n in (seq, last_seq)):
            raise _BAD_CURSOR
        return cls(float("-inf") if timestamp is None else timestamp, seq, last_seq)


@dataclass(frozen=True)
class EventPage:
    events: list[tuple[int, str]]  # (seq, JSON text), oldest first
    next: EventCursor | None


def adk_event_window(
    *, session: Session, num_recent_events: int | None = None, after_timestamp: float | None = None
) -> EventCursor | None:
    """Where ADK's ``GetSessionConfig`` window starts: events with timestamp >= ``after_timestamp``,
    the most recent ``num_recent_events`` of them (ties in timestamp broken by append order). None
    when the window is empty. One backwards index scan of at most ``num_recent_events`` rows."""
    if num_recent_events == 0:
        return None
    events = AdkEvent.objects.filter(session=session)
    if after_timestamp is not None:
        events = events.filter(timestamp__gte=after_timestamp)
    if num_recent_events is None:
        start = (after_timestamp, 0) if after_timestamp is not None else (float("-inf"), 0)
    else:
        found = list(
            events.order_by("-timestamp", "-seq").values_list("timestamp", "seq")[
                num_recent_events - 1 : num_recent_events
            ]
        )
        start = found[0] if found else ((after_timestamp, 0) if after_timestamp is not None else (float("-inf"), 0))
    return EventCursor(timestamp=start[0], seq=start[1], last_seq=session.last_seq)


def adk_event_page(*, session: Session, cursor: EventCursor, page_size: int, max_bytes: int | None) -> EventPage:
    """One page of events from ``cursor`` on, oldest first (timestamp, then append order): at most
    ``page_size`` events and, unless ``max_bytes`` is None, about that much of their stored JSON
    (at least one event). ADK events carry inline files: a page of 1,000 of them must not fill a
    worker's memory, so the database counts the bytes and events past the budget never leave it."""
    events = AdkEvent.objects.filter(session=session, seq__lte=cursor.last_seq)
    if cursor.timestamp != float("-inf"):
        # The plain range is what the index scan starts from; the OR only settles ties.
        events = events.filter(timestamp__gte=cursor.timestamp).filter(
            Q(timestamp__gt=cursor.timestamp) | Q(timestamp=cursor.timestamp, seq__gte=cursor.seq)
        )
    rows = events.annotate(**{json_rows.ROW: F("data")}).order_by("timestamp", "seq")
    rows = rows.values_list("seq", "timestamp", json_rows.ROW)
    budget = json_rows.ByteBudget(max_bytes) if max_bytes is not None else None
    fetched = list((json_rows.byte_bounded(rows, budget) if budget else rows)[: page_size + 1])
    following = None
    if len(fetched) > page_size or (budget and budget.rows_that_fit is not None):
        seq, timestamp, _ = fetched.pop()
        following = EventCursor(timestamp=timestamp, seq=seq, last_seq=cursor.last_seq)
    return EventPage(events=[(seq, data) for seq, _, data in fetched], next=following)


@dataclass(frozen=True)
class HeldEvents:
    """What a reader holds of a session's events after a whole read: the session (its primary key,
    so a session deleted and created again under the same id is another), its history generation
    (retention dropped none since), the last event the read covered, and how many of those events
    had a ``user:`` delta (an erasure of the user's data removes deltas, and the events then read
    back without them). Events are only ever added after ``last_seq`` otherwise, so a reader
    holding a still-valid set needs only the events after it."""

    session_pk: int
    history_generation: int
    last_seq: int
    user_deltas: int

    def encode(self) -> str:
        return f"{self.session_pk}.{self.history_generation}.{self.last_seq}.{self.user_deltas}"

    @classmethod
    def decode(cls, value: str) -> HeldEvents:
        parts = value.split(".")
        if len(parts) != 4 or not all(part.isascii() and part.isdigit() and len(part) < 19 for part in parts):
            raise InvalidInput.for_field("held", "is not an events_token this server gave.")
        return cls(*(int(part) for part in parts))

    def still_held(self, session: Session, *, user_deltas: int) -> bool:
        """Whether these events are still the session's first ``last_seq`` events, as they read
        (``user_deltas``: how many of them have a delta now)."""
        return (
            self.session_pk == session.pk
            and self.history_generation == session.history_generation
            and self.last_seq <= session.last_seq
            and self.user_deltas == user_deltas
        )


@dataclass(frozen=True)
class EventsAfter:
    events: list[tuple[int, str]]  # (seq, JSON text), in append order
    last_seq: int  # the last event this answer covers: the session's, unless the page ended first


def adk_events_after(*, session: Session, after_seq: int, page_size: int, max_bytes: int) -> EventsAfter:
    """The session's events appended after ``after_seq``, in append order: at most ``page_size`` and
    about ``max_bytes`` of them (at least one); a reader asks again from the last one for the rest.
    Read on the (session, seq) index, whatever the session's size."""
    events = AdkEvent.objects.filter(session=session, seq__gt=after_seq, seq__lte=session.last_seq)
    rows = events.annotate(**{json_rows.ROW: F("data")}).order_by("seq").values_list("seq", json_rows.ROW)
    budget = json_rows.ByteBudget(max_bytes)
    fetched = list(json_rows.byte_bounded(rows, budget)[: page_size + 1])
    if len(fetched) > page_size or budget.rows_that_fit is not None:
        fetched.pop()
        return EventsAfter(events=fetched, last_seq=fetched[-1][0])
    return EventsAfter(events=fetched, last_seq=session.last_seq)


@dataclass(frozen=True)
class SessionPage:
    sessions: list[Session]
    next: str | None  # the cursor of the next page


def adk_session_list(
    *,
    tenant: Tenant,
    app_name: str,
    user_id: str | None = None,
    cursor: str | None = None,
    page_size: int = SESSION_PAGE_SIZE,
    max_bytes: int,
) -> SessionPage:
    """An app's sessions (one user's, or every user's) as ADK orders them: last update oldest
    first, then user id and session id; without events. Keyset pages on that order, ending early
    once their session state holds ``max_bytes`` (at least one session)."""
    if not 1 <= page_size <= MAX_SESSION_PAGE_SIZE:
        raise InvalidInput.for_field("page_size", f"must be an integer from 1 to {MAX_SESSION_PAGE_SIZE}.")
    sessions = Session.objects.filter(tenant=tenant, app_name=app_name, framework=FRAMEWORK)
    if user_id is not None:
        sessions = sessions.filter(user_id=user_id)
    if user_id is not None:
        user_id = clean_identifier(user_id, field="user_id")
    if cursor is not None:
        updated, after_user, after_session = _cursor_decode(cursor, float, str, str)
        for identifier in (after_user, after_session):
            _check_cursor_identifier(identifier)
        sessions = sessions.filter(
            Q(last_update_time__gt=updated)
            | Q(last_update_time=updated, user_id__gt=after_user)
            | Q(last_update_time=updated, user_id=after_user, session_id__gt=after_session)
        )
    budget = json_rows.ByteBudget(max_bytes)
    # Only what a listed session shows: a model of every column for each row of a page (timestamps
    # parsed) was most of the list's server time.
    ordered = sessions.order_by("last_update_time", "user_id", "session_id").only(*LISTED_FIELDS)
    size = streaming.stored_size(Session, "durable_state")
    bounded = json_rows.byte_bounded_models(ordered, budget, size=size, large=("durable_state",))
    rows = list(bounded[: page_size + 1])
    following = None
    if len(rows) > page_size or budget.rows_that_fit is not None:
        rows.pop()
        last = rows[-1]
        following = _cursor_encode([last.last_update_time, last.user_id, last.session_id])
    return SessionPage(sessions=rows, next=following)


_BAD_CURSOR = InvalidInput.for_field("cursor", "is not a cursor this server gave.")
_BIGINT_MAX = 2**63 - 1


def _cursor_encode(values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values, separators=(",", ":")).encode()).decode()


def _cursor_decode(cursor: str, *types: type | tuple[type, ...]) -> list[Any]:
    """A cursor's values, each of the expected type (a cursor is read back, never trusted)."""
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, UnicodeError):
        raise _BAD_CURSOR from None
    if not isinstance(values, list) or len(values) != len(types):
        raise _BAD_CURSOR
    for value, expected in zip(values, types, strict=True):
        if isinstance(value, bool) or not isinstance(value, expected):
            raise _BAD_CURSOR
        if isinstance(value, float) and not math.isfinite(value):
            raise _BAD_CURSOR
    return [float(v) if t is float else v for v, t in zip(values, types, strict=True)]


def _check_cursor_identifier(value: str) -> None:
    try:
        clean_identifier(value, field="cursor")
    except InvalidInput:
        raise _BAD_CURSOR from None


def adk_app_state_sql(*, tenant: str, app_name: str) -> str:
    """SQL of one column: the app's state (NULL when none), found by its unique index; ``tenant``
    and ``app_name`` are SQL (a column of the outer query, or a parameter)."""
    return f'(SELECT state FROM "{AdkAppState._meta.db_table}" WHERE tenant_id = {tenant} AND app_name = {app_name})'  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)


@dataclass(frozen=True)
class AdkSessionRead:
    """An ADK session with what a read merges into it, read in one query (userdata_app's
    ``adk_session_read``, which knows the user's tables)."""

    session: Session
    app_state: dict[str, Any]
    user_state: dict[str, Any]
    user_deltas: int | None  # how many of events 1..through_seq have a user: delta, when asked


def adk_app_state_get(*, tenant: Tenant, app_name: str) -> dict[str, Any]:
    """The app's ``app:`` state (keys without the prefix); empty when none was ever set."""
    row = AdkAppState.objects.filter(tenant=tenant, app_name=app_name).values_list("state", flat=True).first()
    return json_object(row or "")
