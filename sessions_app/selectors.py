"""Reads of process state. Every function takes the caller's tenant (or an object already
fetched through it), so nothing outside the tenant is reachable; each query is index-served."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from functools import lru_cache, partial
from typing import Any, TypeVar

from django.db import connections, router
from django.db.models import Count, Field, Model, QuerySet, Subquery, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from agentstate import search, streaming
from agentstate.api import json_rows
from agentstate.api.renderers import RawJSON
from agentstate.exceptions import InvalidInput, NotFound
from agentstate.search import TextIndex
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier
from sessions_app import backends, working_state
from sessions_app.models import (
    AgentTransition,
    Checkpoint,
    Message,
    RetentionPolicy,
    RetentionRun,
    Round,
    RunUsage,
    Session,
)

M = TypeVar("M", bound=Model)

DEFAULT_SESSION_ID = "default"
CORE = "core"  # the framework of the REST API's own sessions, as staff filter by it
CORE_LABEL = "core API"
MAX_RECENT = 500  # most recent messages one read returns (the API's page-size bound)


def session_get(*, tenant: Tenant, user_id: str, session_id: str, app_name: str = "") -> Session:
    """One session by its identity (``app_name`` empty for the REST API's own sessions); anything
    outside the tenant is simply not found.

    Every session-scoped API request starts here, so the query is written out and its row made a
    model directly: building the query with the ORM, or mapping a raw query's columns each time,
    cost several times running it (docs/PERFORMANCE_HISTORY.md, "third round")."""
    session, _ = session_get_with(tenant=tenant, user_id=user_id, session_id=session_id, app_name=app_name)
    return session


def session_get_with(
    *, tenant: Tenant, user_id: str, session_id: str, app_name: str = "", columns: str = "", params: Sequence[Any] = ()
) -> tuple[Session, tuple[Any, ...]]:
    """``session_get``, and in the same query ``columns``: SQL over the session's row (``s``) with
    its ``params``, for what a caller reads beside the session (a framework's state) without a
    round trip of its own. Returns the session and those columns' values."""
    connection = connections[router.db_for_read(Session)]
    sql = _SESSION_GET_SQL if not columns else _SESSION_GET_SQL.replace(" FROM ", f", {columns} FROM ", 1)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, tenant.pk, user_id, session_id, app_name])
        row = cursor.fetchone()
    if row is None:
        raise NotFound("Session not found.")
    width = len(_SESSION_FIELDS)
    return row_as_model(Session, connection, row[:width]), tuple(row[width:])


def model_columns(model: type[Model], alias: str) -> str:
    """``model``'s concrete columns, in field order, as SQL over the table named ``alias``: the
    select list of a written-out query whose rows ``row_as_model`` makes models."""
    return ", ".join(f'{alias}."{field.column}"' for field in model._meta.concrete_fields)


def row_as_model(model: type[M], connection, values: Sequence[Any]) -> M:
    """A row of ``model_columns`` made a model instance, each value converted as the ORM's own
    queries convert it on this database (datetimes from SQLite's text, JSON decoded)."""
    converted = [
        value if convert is None else convert(value)
        for value, convert in zip(values, _converters(connection, model), strict=True)
    ]
    return model.from_db(connection.alias, [field.attname for field in model._meta.concrete_fields], converted)


_SESSION_FIELDS = [field.attname for field in Session._meta.concrete_fields]
# Served by the (tenant, user_id, session_id, app_name) unique index.
_SESSION_GET_SQL = (
    f'SELECT {model_columns(Session, "s")} FROM "{Session._meta.db_table}" s '  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
    "WHERE s.tenant_id = %s AND s.user_id = %s AND s.session_id = %s AND s.app_name = %s"
)


@lru_cache(maxsize=512)  # per database connection wrapper (per alias and thread) and field
def column_converter(connection, field: Field) -> Callable[[Any], Any] | None:
    """What the ORM would apply to a value of ``field``'s column read on this database, found as
    the query compiler finds it; None when the value is taken as it comes."""
    column = field.get_col(field.model._meta.db_table)
    found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
    return partial(_apply, found, column, connection) if found else None


@lru_cache(maxsize=64)  # per database connection wrapper (per alias and thread) and model
def _converters(connection, model: type[Model]) -> list[Callable[[Any], Any] | None]:
    """``column_converter`` of each of ``model``'s concrete fields: a row's converters in one lookup."""
    return [column_converter(connection, field) for field in model._meta.concrete_fields]


def _apply(converters, column, connection, value):
    for convert in converters:
        value = convert(value, column, connection)
    return value


def session_list(
    *,
    tenant: Tenant,
    user_id: str | None = None,
    agent_id: str | None = None,
    workspace_id: str | None = None,
    ended: bool | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
) -> QuerySet[Session]:
    """A tenant's sessions in the stable cursor order ``(created_at, id)``, without messages."""
    sessions = Session.objects.filter(tenant=tenant)
    if user_id is not None:
        sessions = sessions.filter(user_id=user_id)
    if agent_id is not None:
        sessions = sessions.filter(agent_id=agent_id)
    if workspace_id is not None:
        sessions = sessions.filter(workspace_id=workspace_id)
    if ended is not None:
        sessions = sessions.filter(ended_at__isnull=not ended)
    if created_after is not None:
        sessions = sessions.filter(created_at__gte=created_after)
    if created_before is not None:
        sessions = sessions.filter(created_at__lt=created_before)
    if updated_after is not None:
        sessions = sessions.filter(updated_at__gte=updated_after)
    if updated_before is not None:
        sessions = sessions.filter(updated_at__lt=updated_before)
    return sessions.order_by("created_at", "id")


def session_backend(session: Session) -> backends.FrameworkBackend | None:
    """The backend keeping ``session``: named by its framework, or by its metadata for a backend
    that keeps its sessions through the core API; None for the core API's own."""
    if session.framework:
        return backends.backend_get(session.framework)
    metadata = session.metadata if isinstance(session.metadata, dict) else {}
    return next((b for b in backends.backends() if b.metadata_key and b.metadata_key in metadata), None)


def session_framework(session: Session) -> str:
    backend = session_backend(session)
    return backend.framework if backend else (session.framework or CORE)


IMPORTED = "imported"  # the metadata key of a framework's session that import_sessions brought in


def session_imported(session: Session) -> dict[str, Any] | None:
    """Where and when ``import_sessions`` brought a framework's session in (``{"from": the store's
    kind, "at": ISO time, "created_in_store": whether ``created_at`` is the store's own}``), or
    None for a session written here."""
    metadata = session.metadata if isinstance(session.metadata, dict) else {}
    imported = metadata.get(IMPORTED) if session.framework else None
    return imported if isinstance(imported, dict) else None


def framework_choices() -> list[tuple[str, str]]:
    """Every framework staff can filter sessions by, as (name, label): the core API's first."""
    return [(CORE, CORE_LABEL), *sorted(((b.framework, b.label) for b in backends.backends()), key=lambda c: c[1])]


def sessions_of_framework(sessions: QuerySet[Session], framework: str) -> QuerySet[Session]:
    marked = [b.metadata_key for b in backends.backends() if b.metadata_key]
    if framework == CORE:
        core = sessions.filter(framework="")
        for key in marked:
            core = core.exclude(metadata__has_key=key)
        return core
    backend = backends.backend_get(framework)
    if backend is not None and backend.metadata_key:
        return sessions.filter(framework="", metadata__has_key=backend.metadata_key)
    return sessions.filter(framework=framework)


@dataclass(frozen=True)
class SessionContents:
    """What a session holds as staff count it: messages, ADK events, LangGraph checkpoints..."""

    count: int
    unit: str

    def __str__(self) -> str:
        unit = self.unit[:-1] if self.count == 1 and self.unit.endswith("s") else self.unit
        return f"{self.count:,} {unit}"


def session_contents(sessions: Sequence[Session]) -> dict[int, SessionContents]:
    """Each session's contents by its pk, in one query per framework that counts rows (a page of
    sessions costs the same whatever its size)."""
    by_backend: dict[backends.FrameworkBackend | None, list[Session]] = {}
    for session in sessions:
        by_backend.setdefault(session_backend(session), []).append(session)
    contents: dict[int, SessionContents] = {}
    for backend, members in by_backend.items():
        unit = backend.unit if backend else "messages"
        counts = backend.counts(members) if backend and backend.counts else {s.pk: s.message_count for s in members}
        contents.update({s.pk: SessionContents(counts.get(s.pk, 0), unit) for s in members})
    return contents


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
    *, session: Session, limit: int, role: str | None = None, serializer_class: type, max_bytes: int
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
) -> tuple[Session, RawJSON]:
    """The session and its ``recent`` page (``message_recent_rows``, as one JSON list). On
    PostgreSQL the page is read in the session's own statement when its window holds it and every
    row is within its share of ``max_bytes``; otherwise, and for one role, it is read apart. An
    agent's recent read was two statements and their round trips for what one answers."""
    _recent_limit_check(limit)
    connection = connections[router.db_for_read(Session)]
    if connection.vendor != "postgresql" or role is not None or not limit:
        session = session_get(tenant=tenant, user_id=user_id, session_id=session_id)
    else:
        row = json_rows.row_column(serializer_class, Message)
        session, (found,) = session_get_with(
            tenant=tenant,
            user_id=user_id,
            session_id=session_id,
            columns=_window_column(row.sql),
            params=[max_bytes // limit, *row.params, limit, limit, limit],
        )
        if found is not None:
            count, _, rows = found.partition(":")
            if int(count) in (limit, session.message_count):
                return session, RawJSON(f"[{rows}]")
    rows = message_recent_rows(
        session=session, limit=limit, role=role, serializer_class=serializer_class, max_bytes=max_bytes
    )
    return session, json_rows.embedded(rows)


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


def recent_window(session: Session, limit: int) -> int:
    """How many of the newest seqs hold the newest ``limit`` messages: ``limit`` and the seqs that
    edits and retention left unused (``last_seq - message_count``, at most another ``limit``). Up
    to ``limit`` gaps that is certain; past that, likely."""
    return limit + min(max(session.last_seq - session.message_count, 0), limit)


def _recent_page(
    session: Session, *, after: int, role: str | None, limit: int, serializer_class: type, max_bytes: int
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
    *, session: Session, after: int | None, role: str | None, serializer_class: type, newest_first: bool = False
) -> Callable[[int, json_rows.ByteBudget], list[tuple[Any, ...]]]:
    """The session's messages after seq ``after`` (of ``role``, if given), in seq order or newest
    first, as (seq, JSON in ``serializer_class``'s shape): a fetch of the first ``rows`` of them
    within a byte budget (``json_rows.bounded_fetch``). One written-out statement on the (session,
    seq) index: the ORM's building of it cost more than its run, on every read of a history."""
    connection = connections[router.db_for_read(Message)]
    row = json_rows.row_column(serializer_class, Message)
    sql = _messages_sql(row.sql, role is not None, newest_first)
    params = [*row.params, session.pk, after or 0, *([role] if role is not None else [])]

    def fetch(rows: int, budget: json_rows.ByteBudget) -> list[tuple[Any, ...]]:
        return json_rows.bounded_fetch(
            connection,
            sql,
            [*params, rows],
            columns=["seq"],
            rows=rows,
            budget=budget,
            fitting=lambda count: (sql, [*params, count]),
        )

    return fetch


@lru_cache(maxsize=16)
def _messages_sql(row_sql: str, of_role: bool, newest_first: bool) -> str:
    """Seqs start at 1: ``seq > 0`` is the whole history."""
    role = " AND role = %s" if of_role else ""
    order = "DESC" if newest_first else "ASC"
    return (
        f'SELECT seq, {row_sql} AS {json_rows.ROW} FROM "{Message._meta.db_table}" '  # noqa: S608 (quoted identifiers and compiled SQL; values are parameters)
        f"WHERE session_id = %s AND seq > %s{role} ORDER BY seq {order} LIMIT %s"
    )


def _rounds_of(*, tenant: Tenant, user_id: str, session_id: str | None) -> QuerySet[Round]:
    """The session is a scalar subquery, not a join: PostgreSQL then knows the one session id and
    reads "latest" backwards on the (session, round_id) index, instead of sorting every round of a
    joined session (a cost that grew with the rounds: docs/PERFORMANCE_HISTORY.md, "the suites")."""
    session = Session.objects.filter(
        tenant=tenant, user_id=user_id, session_id=session_id or DEFAULT_SESSION_ID, app_name=""
    )
    return Round.objects.filter(session_id=Subquery(session.values("pk")))


def round_get(*, tenant: Tenant, user_id: str, session_id: str | None = None, round_id: int | None = None) -> Round:
    """The given round, or the latest one (largest ``round_id``, not the last written)."""
    rounds = _rounds_of(tenant=tenant, user_id=user_id, session_id=session_id)
    found = rounds.filter(round_id=round_id).first() if round_id is not None else rounds.order_by("-round_id").first()
    if found is None:
        # Only on the miss: say which is missing, the session (as every endpoint does) or the round.
        session_get(tenant=tenant, user_id=user_id, session_id=session_id or DEFAULT_SESSION_ID)
        raise NotFound("Round not found." if round_id is not None else "The session has no rounds.")
    return found


def round_export(
    *, tenant: Tenant, user_id: str, session_id: str | None = None, round_id: int | None = None
) -> dict[str, Any] | None:
    """The AgentScope ``export_state``: a round's state, the latest when no id is given, or None."""
    try:
        return round_get(tenant=tenant, user_id=user_id, session_id=session_id, round_id=round_id).state
    except NotFound:
        return None


def round_list(*, session: Session) -> QuerySet[Round]:
    """A session's rounds in id order, without their state."""
    return Round.objects.filter(session=session).order_by("round_id").defer("state")


def checkpoint_latest(*, session: Session, label: str) -> Checkpoint:
    """The newest checkpoint with ``label`` (insertion order breaks ties)."""
    checkpoint = (
        Checkpoint.objects.filter(session=session, label=clean_identifier(label, field="label")).order_by("-id").first()
    )
    if checkpoint is None:
        raise NotFound(f"No checkpoint labelled {label!r}.")
    return checkpoint


def checkpoint_list(*, session: Session) -> QuerySet[Checkpoint]:
    """A session's checkpoints (id, label, time) in insertion order."""
    return Checkpoint.objects.filter(session=session).order_by("id").only("id", "label", "created_at", "session_id")


@dataclass(frozen=True)
class RestoredSession:
    session: Session
    checkpoints: Iterator[Checkpoint]  # read in batches bounded by bytes (``agentstate.streaming``)
    working_state: dict[str, Any]


def session_restore(*, tenant: Tenant, user_id: str, session_id: str) -> RestoredSession:
    """What survives a session: its checkpoints, and working state only while it is live
    (empty once ended, as in the three-categories seed)."""
    session = session_get(tenant=tenant, user_id=user_id, session_id=session_id)
    return RestoredSession(
        session=session,
        checkpoints=streaming.rows_in_batches(
            Checkpoint.objects.filter(session=session).order_by("id"), size=streaming.stored_size(Checkpoint, "state")
        ),
        working_state=working_state_get(session=session),
    )


def working_state_get(*, session: Session) -> dict[str, Any]:
    """A live session's working state; an ended session has none."""
    if session.ended_at is not None:
        return {}
    return working_state.get_store().get(session.pk)


def working_state_outlives_deleted_sessions() -> bool:
    """Whether a deleted session's working state stays in the store until it is cleared after the
    commit (Redis), rather than going with the session's row (the database store)."""
    return working_state.get_store().outlives_its_session


def transition_list(*, session: Session) -> QuerySet[AgentTransition]:
    """A session's agent hand-offs in the order they were recorded."""
    return AgentTransition.objects.filter(session=session).order_by("id")


def iso(value: datetime | None) -> str | None:
    """A time as exports write it (ISO 8601), None kept."""
    return value.isoformat() if value is not None else None


def message_as_dict(m: Message) -> dict[str, Any]:
    """A message as JSON-ready data, the fields the API shows (export, a pop's kept answer)."""
    return {
        "seq": m.seq,
        "client_id": m.client_id,
        "role": m.role,
        "type": m.type,
        "status": m.status,
        "name": m.name,
        "content": m.content,
        "metadata": m.metadata,
        "usage": m.usage,
        "created_at": iso(m.created_at),
    }


USAGE_COUNTS = ("requests", "input_tokens", "output_tokens", "total_tokens")
TOP_USERS = 10  # users the dashboard lists by tokens used


def run_usage_list(*, session: Session) -> QuerySet[RunUsage]:
    """A session's usage, one row per turn, in turn order."""
    return RunUsage.objects.filter(session=session).order_by("turn")


def run_usage_as_dict(u: RunUsage) -> dict[str, Any]:
    """One turn's usage as JSON-ready data, the fields the API shows (and the export)."""
    return {
        "turn": u.turn,
        **{name: getattr(u, name) for name in USAGE_COUNTS},
        "input_tokens_details": u.input_tokens_details,
        "output_tokens_details": u.output_tokens_details,
        "updated_at": iso(u.updated_at),
    }


def run_usage_totals(rows: QuerySet[RunUsage]) -> dict[str, int]:
    """The sums of ``rows``' counts and how many turns they are (0 each for none)."""
    totals = rows.aggregate(turns=Count("id"), **{name: Sum(name) for name in USAGE_COUNTS})
    return {name: value or 0 for name, value in totals.items()}


def run_usage_summary(*, top_users: int = TOP_USERS) -> dict[str, Any]:
    """The dashboard's usage: totals per tenant, and the ``top_users`` users who used the most tokens
    (with their tenant). One grouped scan of the usage table each."""
    sums = {name: Sum(name) for name in USAGE_COUNTS}
    per_tenant = list(
        RunUsage.objects.order_by().values("tenant__slug").annotate(turns=Count("id"), **sums).order_by("tenant__slug")
    )
    per_user = list(
        RunUsage.objects.order_by()
        .values("tenant_id", "tenant__slug", "user_id")
        .annotate(turns=Count("id"), **sums)
        .order_by("-total_tokens", "tenant__slug", "user_id")[:top_users]
    )
    return {"per_tenant": per_tenant, "per_user": per_user}


def activity_summary(*, days: int = 30) -> dict[str, Any]:
    """Totals and messages per day over the last ``days`` days, for the admin dashboard."""
    now = timezone.now()
    today = timezone.localdate(now)
    start_day = today - timedelta(days=days - 1)
    start = timezone.make_aware(datetime.combine(start_day, time.min))
    counts = dict(
        Message.objects.filter(created_at__gte=start)
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values_list("day")
        .annotate(n=Count("id"))
    )
    today_start = timezone.make_aware(datetime.combine(today, time.min))
    return {
        "sessions": Session.objects.count(),
        "messages": Session.objects.aggregate(n=Sum("message_count"))["n"] or 0,
        "active_sessions_today": Session.objects.filter(ended_at__isnull=True, updated_at__gte=today_start).count(),
        "messages_per_day": [(day, counts.get(day, 0)) for day in (start_day + timedelta(days=i) for i in range(days))],
    }


def retention_policy_fields() -> tuple[str, ...]:
    """The rules of a policy: the core's columns, then each registered backend's."""
    return (*RetentionPolicy.RULES, *(rule.policy_field for rule in backends.retention_rules()))


def retention_policy_as_dict(*, tenant: Tenant) -> dict[str, Any]:
    """The tenant's retention rules as the API shows them: null means keep everything (no policy, or
    that rule empty)."""
    policy = RetentionPolicy.objects.filter(tenant=tenant).first()
    rules = {name: policy.rule(name) if policy else None for name in retention_policy_fields()}
    return {"configured": policy is not None, **rules, "updated_at": policy.updated_at if policy else None}


def retention_runs_recent(*, limit: int) -> list[RetentionRun]:
    """The last runs of ``apply_retention``, newest first (the admin dashboard)."""
    return list(RetentionRun.objects.order_by("-started_at")[:limit])


# --- Search --------------------------------------------------------------------------------

# The messages' text index (created by migration 0013): every string value of a message's content,
# whatever its shape (a string, parts), in a generated column on PostgreSQL (not a model field:
# the database alone writes it), in an FTS5 table on SQLite.
MESSAGE_INDEX = TextIndex(
    table=Message._meta.db_table,
    pg_vector="t.search_vector",
    pg_text="(SELECT string_agg(v #>> '{}', ' ') FROM jsonb_path_query(t.content, "
    "'strict $.** ? (@.type() == \"string\")') v)",
    fts_table="sessions_app_message_search",
    pg_owner=("tenant_id", "user_id"),  # a search is one user's: the index hands over theirs alone
)


@dataclass(frozen=True)
class MessageHit:
    session_id: str
    seq: int
    role: str
    rank: float
    snippet: str


def message_search(*, tenant: Tenant, user_id: str, query: str, limit: int, offset: int = 0) -> list[MessageHit]:
    """The messages of a user's sessions whose content matches ``query`` (``agentstate.search``):
    the newest ``RANKED_MATCHES``, best first. Reads where ``router`` sends them: a replica inside ``replica_reads``."""
    user_id = clean_identifier(user_id, field="user_id")
    query = search.query_clean(query)
    hits = search.text_search(
        MESSAGE_INDEX,
        connection=connections[router.db_for_read(Message)],
        query=query,
        # A message's owner is its session's, copied when written: message_user_newest hands the
        # user's matches newest first, as text_search ranks them.
        scope="t.tenant_id = %s AND t.user_id = %s",
        scope_params=[tenant.pk, user_id],
        owner=(tenant.pk, user_id),
        newest="t.created_at",
        columns="s.session_id, t.seq, t.role",
        joins="JOIN sessions_app_session s ON s.id = t.session_id",
        limit=limit,
        offset=offset,
    )
    return [
        MessageHit(session_id=session_id, seq=seq, role=role, rank=hit.rank, snippet=hit.snippet)
        for hit in hits
        for session_id, seq, role in [hit.row]
    ]
