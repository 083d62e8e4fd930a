"""Reads of sessions and what hangs off them (rounds, checkpoints, working state, hand-offs, usage).
Every function takes the caller's tenant (or an object already fetched through it), so nothing
outside the tenant is reachable; each query is index-served."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections, router
from django.db.models import QuerySet, Subquery

from agentstate import streaming
from agentstate.exceptions import NotFound
from agentstate.statements import prepared_cursor
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier
from sessions_app import backends, working_state
from sessions_app.models import (
    AgentTransition,
    Checkpoint,
    Round,
    RunUsage,
    Session,
)
from sessions_app.selectors.rows import model_columns, row_as_model

DEFAULT_SESSION_ID = "default"
CORE = "core"  # the framework of the REST API's own sessions, as staff filter by it
CORE_LABEL = "core API"


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
    # Raw: benchmarks/scaling.py ratio ≤ 1.3 and http_load.py append p99; the ORM's build cost more
    connection = connections[router.db_for_read(Session)]
    sql = _SESSION_GET_SQL if not columns else _SESSION_GET_SQL.replace(" FROM ", f", {columns} FROM ", 1)
    with prepared_cursor(connection) as cursor:
        cursor.execute(sql, [*params, tenant.pk, user_id, session_id, app_name])
        row = cursor.fetchone()
    if row is None:
        raise NotFound("Session not found.")
    width = len(_SESSION_FIELDS)
    return row_as_model(Session, connection, row[:width]), tuple(row[width:])


_SESSION_FIELDS = [field.attname for field in Session._meta.concrete_fields]
# Served by the (tenant, user_id, session_id, app_name) unique index.
_SESSION_GET_SQL = (
    f'SELECT {model_columns(Session, "s")} FROM "{Session._meta.db_table}" s '  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
    "WHERE s.tenant_id = %s AND s.user_id = %s AND s.session_id = %s AND s.app_name = %s"
)


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


def run_usage_list(*, session: Session) -> QuerySet[RunUsage]:
    """A session's usage, one row per turn, in turn order."""
    return RunUsage.objects.filter(session=session).order_by("turn")
