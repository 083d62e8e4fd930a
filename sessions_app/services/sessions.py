"""Writes to sessions: create, update, end, delete."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import cache
from typing import Any

from django.db import IntegrityError, connections, router, transaction
from django.db.models import F, Q
from django.utils import timezone

from agentstate.exceptions import NotFound, PreconditionFailed, SessionAlreadyExists
from agentstate.subjects import PROCESS_STATE, subject_write_check
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_json, clean_optional_label
from sessions_app.models import Session
from sessions_app.services.live import (
    STALE_SESSION,
    activity_changes,
    check_version,
    lock_session,
    session_held,
    session_hold_check,
    working_state_clear_on_commit,
)


def new_session_id_clean(value: Any, *, field: str) -> str:
    """The id of a session being made (create, ADK's create, fork): stripped, as AgentScope's and
    ADK's own services strip it, and a blank or absent one becomes a new UUID. Every other
    identifier is stored exactly as sent."""
    stripped = value.strip() if isinstance(value, str) else value
    return clean_identifier(str(uuid.uuid4()) if stripped in (None, "") else stripped, field=field)


@transaction.atomic  # the erased-subject check and the insert commit together
def session_create(
    *,
    tenant: Tenant,
    user_id: str,
    session_id: str | None = None,
    agent_id: str = "",
    workspace_id: str = "",
    metadata: dict[str, Any] | None = None,
) -> Session:
    """Create a session; a blank id becomes a new UUID, an existing id is a conflict (never
    overwritten)."""
    user_id = clean_identifier(user_id, field="user_id")
    subject_write_check(tenant=tenant, user_id=user_id, category=PROCESS_STATE)
    session = Session(
        tenant=tenant,
        user_id=user_id,
        session_id=new_session_id_clean(session_id, field="session_id"),
        agent_id=clean_optional_label(agent_id, field="agent_id"),
        workspace_id=clean_optional_label(workspace_id, field="workspace_id"),
        metadata=clean_json({} if metadata is None else metadata, field="metadata", require_object=True),
    )
    try:
        with transaction.atomic():
            session_insert(session)
    except IntegrityError:
        raise SessionAlreadyExists(f"Session {session.session_id!r} already exists for this user.") from None
    return session


def session_insert(
    session: Session, *, columns: str = "", params: Sequence[Any] = (), checked: bool = False
) -> tuple[Any, ...] | None:
    """Store ``session``, a new model, and give it its primary key. On PostgreSQL one written-out
    ``INSERT``, which also returns ``columns`` (SQL over the new row, ``s``, with ``params``): what a
    caller reads beside a new session (a framework's state) without a statement of its own; the
    ORM's insert cost more to build than to run, and every create pays it. Elsewhere the ORM's
    insert, and None: the caller reads what it needs itself. An existing identity raises
    ``IntegrityError``, as the ORM's insert does. ``checked``: the subject's write check
    (``subject_write_check``) comes first, on PostgreSQL in the insert's round trip, the insert
    prepared and made only where the check passes."""
    # Raw: benchmarks/frameworks.py create-session per-call targets; the ORM's insert cost more to build
    connection = connections[router.db_for_write(Session)]
    if connection.vendor != "postgresql":
        if checked:
            subject_write_check(tenant=session.tenant, user_id=session.user_id, category=PROCESS_STATE)
        session.save(force_insert=True, using=connection.alias)
        return None
    fields = _INSERTED_FIELDS
    values = [field.get_db_prep_save(field.pre_save(session, True), connection) for field in fields]
    if checked:
        rows = subject_write_check(
            tenant=session.tenant,
            user_id=session.user_id,
            category=PROCESS_STATE,
            then=(_insert_sql(columns, checked=True), [*values, *params]),
        )
        pk, *extra = rows[0]  # type: ignore[index]  # PostgreSQL: the write's rows
    else:
        with connection.cursor() as cursor:
            cursor.execute(_insert_sql(columns), [*values, *params])
            pk, *extra = cursor.fetchone()
    session.pk = pk
    session._state.adding, session._state.db = False, connection.alias
    return tuple(extra)


_INSERTED_FIELDS = [field for field in Session._meta.concrete_fields if not field.primary_key]


@cache
def _insert_sql(columns: str, *, checked: bool = False) -> str:
    names = ", ".join(f'"{field.column}"' for field in _INSERTED_FIELDS)
    marks = ", ".join(["%s"] * len(_INSERTED_FIELDS))
    # ``allowed``: subject_write_check's relation, one row where the check passed (quoted identifiers
    # and constant SQL; values are parameters)
    source = f"SELECT {marks} FROM allowed" if checked else f"VALUES ({marks})"  # noqa: S608
    returning = f"s.id, {columns}" if columns else "s.id"
    return f'INSERT INTO "{Session._meta.db_table}" AS s ({names}) {source} RETURNING {returning}'


_UNSET: Any = object()


def session_update(
    *,
    session: Session,
    expected_version: int | None = None,
    agent_id: str = _UNSET,
    workspace_id: str = _UNSET,
    metadata: dict[str, Any] = _UNSET,
) -> Session:
    """Change a session's agent, workspace or metadata; with ``expected_version`` only if nobody
    changed it meanwhile (compare-and-set, else ``PreconditionFailed``)."""
    changes: dict[str, Any] = {}
    if agent_id is not _UNSET:
        changes["agent_id"] = clean_optional_label(agent_id, field="agent_id")
    if workspace_id is not _UNSET:
        changes["workspace_id"] = clean_optional_label(workspace_id, field="workspace_id")
    if metadata is not _UNSET:
        changes["metadata"] = clean_json(metadata, field="metadata", require_object=True)
    if not changes:  # nothing changes, so neither does the version other writers' If-Match names
        current = Session.objects.filter(pk=session.pk).first()
        if current is None:
            raise NotFound("Session not found.")
        check_version(current, expected_version)
        return current
    rows = Session.objects.filter(pk=session.pk)
    if expected_version is not None:
        rows = rows.filter(version=expected_version)
    updated = rows.update(**changes, **activity_changes(), version=F("version") + 1)
    if not updated:
        if expected_version is not None and Session.objects.filter(pk=session.pk).exists():
            raise PreconditionFailed(STALE_SESSION)
        raise NotFound("Session not found.")
    session.refresh_from_db()
    return session


@transaction.atomic
def session_end(*, session: Session, expected_version: int | None = None) -> Session:
    """Mark the session ended and discard its working state (kept while a legal hold covers the
    session: a hold keeps a session with everything in it); ending twice changes nothing (an
    ended session is returned as it is, so a retried end never fails on its own version bump).
    With ``expected_version``, a live session is ended only if nobody changed it meanwhile. An
    agent's end is final: a session retention ended is ended again, now, and no write reopens it."""
    locked = lock_session(session)
    if locked.ended_at is None or locked.ended_by_retention:
        check_version(locked, expected_version)
    now = timezone.now()  # read under the lock: no message stored before the end is stamped after it
    Session.objects.filter(Q(ended_at__isnull=True) | Q(ended_by_retention=True), pk=session.pk).update(
        ended_at=now, updated_at=now, ended_by_retention=False, version=F("version") + 1
    )
    if session_held(locked) is None:
        working_state_clear_on_commit([session.pk])
    session.refresh_from_db()
    return session


@transaction.atomic
def session_delete(*, session: Session, expected_version: int | None = None) -> dict[str, int]:
    """Delete the session with its messages, rounds, checkpoints, transitions and working state,
    with ``expected_version`` only if nobody changed it meanwhile. User data (userdata_app) is a
    different lifecycle: only what the map declares derived from the session goes with it (the
    memories made only from it, ``agentstate.subject_data.DerivedFrom``)."""
    check_version(lock_session(session), expected_version)
    session_hold_check(session)
    working_state_clear_on_commit([session.pk])
    _, per_model = Session.objects.filter(pk=session.pk).delete()
    return {label.split(".")[-1].lower(): count for label, count in per_model.items()}
