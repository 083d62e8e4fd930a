"""Reads of a session's messages: its history, its most recent page, as models or as JSON rows."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple, Protocol

from django.db import connections, router
from django.db.models import QuerySet

from agentstate.api import json_rows
from agentstate.api.renderers import RawJSON
from agentstate.exceptions import InvalidInput, NotFound
from agentstate.statements import prepared_cursor
from agentstate.tenancy.models import Tenant
from sessions_app.models import (
    Message,
    Session,
)
from sessions_app.selectors.sessions import session_get

MAX_RECENT = 500  # most recent messages one read returns (the API's page-size bound)


class HistoryCounters(Protocol):
    """What a read of the newest messages needs of its session: a ``Session``, or ``_Counters``."""

    @property
    def pk(self) -> Any: ...

    @property
    def last_seq(self) -> int: ...

    @property
    def message_count(self) -> int: ...


class _Counters(NamedTuple):
    """A session's counters, as a recent read's own statement returned them."""

    pk: int
    last_seq: int
    message_count: int


def message_list(*, session: Session, after_seq: int | None = None, role: str | None = None) -> QuerySet[Message]:
    """History in order, optionally after a sequence number and of one role."""
    messages = Message.objects.filter(session=session)
    if after_seq is not None:
        messages = messages.filter(seq__gt=after_seq)
    if role is not None:
        messages = messages.filter(role=role)
    return messages.order_by("seq")


def _recent_limit_check(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_RECENT:
        raise InvalidInput.for_field("limit", f"must be an integer from 0 to {MAX_RECENT}.")


def _newest_messages(*, session: Session, limit: int, role: str | None) -> QuerySet[Message]:
    _recent_limit_check(limit)
    messages = Message.objects.filter(session=session)
    if role is not None:
        messages = messages.filter(role=role)
    return messages.order_by("-seq")


def message_recent(*, session: Session, limit: int, role: str | None = None) -> list[Message]:
    """The most recent ``limit`` messages, oldest first."""
    return list(reversed(_newest_messages(session=session, limit=limit, role=role)[:limit]))


def message_recent_rows(
    *, session: HistoryCounters, limit: int, role: str | None = None, serializer_class: type, max_bytes: int
) -> list[tuple[Any, ...]]:
    """``message_recent`` as rows of ``json_rows`` in ``serializer_class``'s shape, bounded by
    ``max_bytes`` of JSON: when the last ``limit`` hold more, the newest that fit (at least one).

    The read first asks only for the newest seqs the session gave out, ``recent_window`` of them,
    so the (session, seq) index bounds it whatever the planner believes of the session: with
    statistics from before a session grew (a table not analyzed since), PostgreSQL read and sorted
    every message of it for 20 (docs/PERFORMANCE_HISTORY.md, "request path"). When edits' gaps leave fewer than
    ``limit`` there, the whole history is asked. The statement is written out (``message_rows``):
    the ORM's building of it cost twice its run, on every agent's read of its recent history."""
    _recent_limit_check(limit)
    if not limit:
        return []
    if role is None and session.message_count > limit:
        after = session.last_seq - recent_window(session, limit)
        rows, complete = _recent_page(
            session, after=after, role=None, limit=limit, serializer_class=serializer_class, max_bytes=max_bytes
        )
        if complete:
            return rows
    rows, _ = _recent_page(
        session, after=0, role=role, limit=limit, serializer_class=serializer_class, max_bytes=max_bytes
    )
    return rows


def session_recent_rows(
    *,
    tenant: Tenant,
    user_id: str,
    session_id: str,
    limit: int,
    role: str | None = None,
    serializer_class: type,
    max_bytes: int,
) -> tuple[int, RawJSON]:
    """The session's history generation and its ``recent`` page (``message_recent_rows``, as one
    JSON list). On PostgreSQL one statement reads the session's counters and the page, when its
    window holds it and every row is within its share of ``max_bytes``; otherwise one more reads the
    page by those counters. Elsewhere, and for one role, the session is read, then the page. An
    agent's recent read was two statements and their round trips for what one answers, and the
    whole session row made a model for a few counters."""
    # Raw: benchmarks/frameworks.py SDK get_items(limit=20) per-call target: the page and two counters
    _recent_limit_check(limit)
    connection = connections[router.db_for_read(Session)]
    if connection.vendor == "postgresql" and role is None and limit:
        row = json_rows.row_column(serializer_class, Message)
        with prepared_cursor(connection) as cursor:
            cursor.execute(
                _recent_sql(row.sql),
                [max_bytes // limit, *row.params, limit, limit, limit, tenant.pk, user_id, session_id],
            )
            found = cursor.fetchone()
        if found is None:
            raise NotFound("Session not found.")
        generation, window, *counters = found
        session_counters = _Counters(*counters)
        if window is None:  # a row over its share of the budget: the window read within the budget
            page = message_recent_rows(
                session=session_counters, limit=limit, serializer_class=serializer_class, max_bytes=max_bytes
            )
            return generation, json_rows.embedded(page)
        count, _, rows = window.partition(":")
        if int(count) in (limit, session_counters.message_count):
            return generation, RawJSON(f"[{rows}]")
        page, _ = _recent_page(  # edits' gaps left the window short of rows: the whole history's newest
            session_counters, after=0, role=None, limit=limit, serializer_class=serializer_class, max_bytes=max_bytes
        )
        return generation, json_rows.embedded(page)
    session = session_get(tenant=tenant, user_id=user_id, session_id=session_id)
    page = message_recent_rows(
        session=session, limit=limit, role=role, serializer_class=serializer_class, max_bytes=max_bytes
    )
    return session.history_generation, json_rows.embedded(page)


class SessionMessageRows:
    """The first page of a REST API session's messages after seq ``after`` (of ``role``, if given),
    as ``message_rows`` fetches one (``fetch(rows, budget)``, what a paginator asks for), found by
    the session's identity; once fetched, ``generation`` is the session's history generation. On
    PostgreSQL one statement finds the session and reads the page, when every row is within its
    share of the budget (else ``json_rows.bounded_fetch`` goes on from the rows it read: their
    lengths, then those that fit); elsewhere the session is read, then the page. A reader's
    incremental read (the SDK's whole read asks what came after the items it holds) was two
    statements, the session row made a model, and the page's statement planned on every call."""

    def __init__(
        self,
        *,
        tenant: Tenant,
        user_id: str,
        session_id: str,
        after: int | None,
        role: str | None,
        serializer_class: type,
    ) -> None:
        self.tenant, self.user_id, self.session_id = tenant, user_id, session_id
        self.after, self.role, self.serializer_class = after, role, serializer_class
        self.generation: int  # set by the fetch

    def __call__(self, rows: int, budget: json_rows.ByteBudget) -> list[tuple[Any, ...]]:
        # Raw: benchmarks/frameworks.py SDK get_items (whole) per-call target: the session and its page at once
        connection = connections[router.db_for_read(Session)]
        if connection.vendor == "postgresql":
            row = json_rows.row_column(self.serializer_class, Message)
            of_role = [self.role] if self.role is not None else []
            identity = [self.tenant.pk, self.user_id, self.session_id]
            with prepared_cursor(connection) as cursor:
                cursor.execute(
                    _session_page_sql(row.sql, self.role is not None),
                    [budget.limit // rows, *row.params, self.after or 0, *of_role, rows, *identity],
                )
                found = cursor.fetchall()
            if not found:
                raise NotFound("Session not found.")
            self.generation, *counters = found[0][:4]
            page = [row[4:] for row in found if row[4] is not None]
            fetch = message_rows(
                session=_Counters(*counters), after=self.after, role=self.role, serializer_class=self.serializer_class
            )
            return fetch(rows, budget, page)  # the page as read, or the rows that fit the budget
        session = session_get(tenant=self.tenant, user_id=self.user_id, session_id=self.session_id)
        self.generation = session.history_generation
        return message_rows(session=session, after=self.after, role=self.role, serializer_class=self.serializer_class)(
            rows, budget
        )


# A REST API session (``s``) by its identity: the (tenant, user_id, session_id, app_name) unique index.
_REST_SESSION = "s.tenant_id = %s AND s.user_id = %s AND s.session_id = %s AND s.app_name = ''"


@lru_cache(maxsize=4)
def _session_page_sql(row_sql: str, of_role: bool) -> str:
    """A REST API session's history generation and counters (id, last_seq, message_count) on each
    row of its page (``_messages_sql`` in seq order, each row's JSON NULL when over its share of the
    budget); one row with no message for an empty page, none for no session."""
    return (
        "SELECT s.history_generation, s.id, s.last_seq, s.message_count, m.seq, "  # noqa: S608 (quoted identifiers and compiled SQL; values are parameters)
        f"CASE WHEN OCTET_LENGTH(m.{json_rows.ROW}) <= %s THEN m.{json_rows.ROW} END "
        f'FROM "{Session._meta.db_table}" s LEFT JOIN LATERAL ('
        f"{_messages_sql(row_sql, of_role, False, 's.id')}) m ON TRUE "
        f"WHERE {_REST_SESSION} ORDER BY m.seq"
    )


@lru_cache(maxsize=8)
def _recent_sql(row_sql: str) -> str:
    """A REST API session's history generation, its ``_window_column`` and its counters (id,
    last_seq, message_count), found by its identity (the (tenant, user_id, session_id, app_name)
    unique index)."""
    return (
        f"SELECT s.history_generation, {_window_column(row_sql)}, s.id, s.last_seq, s.message_count "  # noqa: S608 (quoted identifiers and compiled SQL; values are parameters)
        f'FROM "{Session._meta.db_table}" s '
        f"WHERE {_REST_SESSION}"
    )


@lru_cache(maxsize=8)
def _window_column(row_sql: str) -> str:
    """Over a session's row (``s``): its ``recent_window`` read newest first, as the count of rows
    read, ``:`` and their JSON joined oldest first; NULL when a row is over its share of the byte
    budget (the page is then read apart, as ``json_rows.bounded_fetch`` reads one)."""
    return (
        f"(SELECT CASE WHEN COALESCE(BOOL_AND(OCTET_LENGTH({json_rows.ROW}) <= %s), TRUE) "  # noqa: S608 (quoted identifiers and compiled SQL; values are parameters)
        f"THEN COUNT(*) || ':' || COALESCE(STRING_AGG({json_rows.ROW}, ',' ORDER BY seq), '') END "
        f'FROM (SELECT seq, {row_sql} AS {json_rows.ROW} FROM "{Message._meta.db_table}" '
        "WHERE session_id = s.id AND seq > s.last_seq - (%s + LEAST(GREATEST(s.last_seq - s.message_count, 0), %s)) "
        "ORDER BY seq DESC LIMIT %s) _page)"
    )


def recent_window(session: HistoryCounters, limit: int) -> int:
    """How many of the newest seqs hold the newest ``limit`` messages: ``limit`` and the seqs that
    edits and retention left unused (``last_seq - message_count``, at most another ``limit``). Up
    to ``limit`` gaps that is certain; past that, likely."""
    return limit + min(max(session.last_seq - session.message_count, 0), limit)


def _recent_page(
    session: HistoryCounters, *, after: int, role: str | None, limit: int, serializer_class: type, max_bytes: int
) -> tuple[list[tuple[Any, ...]], bool]:
    """The newest ``limit`` messages after seq ``after`` (of ``role``, if given) as JSON rows
    within ``max_bytes``, oldest first, and whether that is a whole page (``limit`` rows, or as
    many as the budget holds)."""
    budget = json_rows.ByteBudget(max_bytes)
    fetched = message_rows(
        session=session, after=after, role=role, serializer_class=serializer_class, newest_first=True
    )(limit, budget)
    rows = [row for row in fetched if row[-1] is not None]
    return list(reversed(rows)), budget.rows_that_fit is not None or len(rows) == limit


def message_rows(
    *, session: HistoryCounters, after: int | None, role: str | None, serializer_class: type, newest_first: bool = False
) -> Callable[..., list[tuple[Any, ...]]]:
    """The session's messages after seq ``after`` (of ``role``, if given), in seq order or newest
    first, as (seq, JSON in ``serializer_class``'s shape): a fetch of the first ``rows`` of them
    within a byte budget (``fetch(rows, budget[, fetched])``, ``json_rows.bounded_fetch``). One
    written-out statement on the (session, seq) index: the ORM's building of it cost more than its
    run, on every read of a history."""
    connection = connections[router.db_for_read(Message)]
    row = json_rows.row_column(serializer_class, Message)
    sql = _messages_sql(row.sql, role is not None, newest_first)
    params = [*row.params, session.pk, after or 0, *([role] if role is not None else [])]

    def fetch(
        rows: int, budget: json_rows.ByteBudget, fetched: list[tuple[Any, ...]] | None = None
    ) -> list[tuple[Any, ...]]:
        return json_rows.bounded_fetch(
            connection,
            sql,
            [*params, rows],
            columns=["seq"],
            rows=rows,
            budget=budget,
            fitting=lambda count: (sql, [*params, count]),
            fetched=fetched,
        )

    return fetch


@lru_cache(maxsize=32)
def _messages_sql(row_sql: str, of_role: bool, newest_first: bool, session: str = "%s") -> str:
    """Seqs start at 1: ``seq > 0`` is the whole history. ``session``: SQL giving the session's id
    (a parameter, or a column of a query around this one)."""
    role = " AND role = %s" if of_role else ""
    order = "DESC" if newest_first else "ASC"
    return (
        f'SELECT seq, {row_sql} AS {json_rows.ROW} FROM "{Message._meta.db_table}" '  # noqa: S608 (quoted identifiers and compiled SQL; values are parameters)
        f"WHERE session_id = {session} AND seq > %s{role} ORDER BY seq {order} LIMIT %s"
    )
