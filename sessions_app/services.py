"""Writes to process state. Every rule of sessions, history, rounds, checkpoints, transitions and
working state lives in exactly one function here; views, admin and commands call them.

Ordering rule: per-session counters (message ``seq``, automatic ``round_id``) are reserved with
one ``UPDATE session ... RETURNING`` that also takes the session's row lock, so numbers are
gap-free, never duplicated, and the write fails cleanly once the session has ended.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Max
from django.utils import timezone

from agentstate.exceptions import (
    InvalidInput,
    NotFound,
    PreconditionFailed,
    SessionAlreadyExists,
    SessionEnded,
)
from agentstate.tenancy.models import Tenant
from agentstate.validation import (
    ROUND_ID_MAX,
    clean_identifier,
    clean_json,
    clean_optional_label,
    clean_round_id,
)
from sessions_app import selectors, working_state
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
from userdata_app.erased_subjects import PROCESS_STATE, subject_write_check

MAX_MESSAGES_PER_APPEND = 500
MESSAGE_FIELDS = {"client_id", "role", "type", "status", "name", "content", "metadata", "usage"}


# --- Sessions -----------------------------------------------------------------------------


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
    stripped = session_id.strip() if isinstance(session_id, str) else session_id
    user_id = clean_identifier(user_id, field="user_id")
    subject_write_check(tenant=tenant, user_id=user_id, category=PROCESS_STATE)
    session = Session(
        tenant=tenant,
        user_id=user_id,
        session_id=clean_identifier(str(uuid.uuid4()) if stripped in (None, "") else stripped, field="session_id"),
        agent_id=clean_optional_label(agent_id, field="agent_id"),
        workspace_id=clean_optional_label(workspace_id, field="workspace_id"),
        metadata=clean_json({} if metadata is None else metadata, field="metadata", require_object=True),
    )
    try:
        with transaction.atomic():
            session.save(force_insert=True)
    except IntegrityError:
        raise SessionAlreadyExists(f"Session {session.session_id!r} already exists for this user.") from None
    return session


_UNSET: Any = object()
_STALE_SESSION = "The session changed since you read it (If-Match does not match)."


def _check_version(current: Session, expected_version: int | None) -> None:
    if expected_version is not None and current.version != expected_version:
        raise PreconditionFailed(_STALE_SESSION)


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
        _check_version(current, expected_version)
        return current
    rows = Session.objects.filter(pk=session.pk)
    if expected_version is not None:
        rows = rows.filter(version=expected_version)
    updated = rows.update(**changes, updated_at=timezone.now(), version=F("version") + 1)
    if not updated:
        if expected_version is not None and Session.objects.filter(pk=session.pk).exists():
            raise PreconditionFailed(_STALE_SESSION)
        raise NotFound("Session not found.")
    session.refresh_from_db()
    return session


@transaction.atomic
def session_end(*, session: Session, expected_version: int | None = None) -> Session:
    """Mark the session ended and discard its working state; ending twice changes nothing (an
    ended session is returned as it is, so a retried end never fails on its own version bump).
    With ``expected_version``, a live session is ended only if nobody changed it meanwhile."""
    locked = _lock_session(session)
    if locked.ended_at is None:
        _check_version(locked, expected_version)
    now = timezone.now()  # read under the lock: no message stored before the end is stamped after it
    Session.objects.filter(pk=session.pk, ended_at__isnull=True).update(
        ended_at=now, updated_at=now, version=F("version") + 1
    )
    working_state.get_store().clear(session.pk)
    session.refresh_from_db()
    return session


@transaction.atomic
def session_delete(*, session: Session, expected_version: int | None = None) -> dict[str, int]:
    """Delete the session with its messages, rounds, checkpoints, transitions and working state,
    with ``expected_version`` only if nobody changed it meanwhile. User data (userdata_app) is a
    different lifecycle and is never touched."""
    # The lock also keeps a working-state write queued on the row from landing after the clear.
    _check_version(_lock_session(session), expected_version)
    working_state.get_store().clear(session.pk)
    _, per_model = Session.objects.filter(pk=session.pk).delete()
    return {label.split(".")[-1].lower(): count for label, count in per_model.items()}


def _session_get_or_create(*, tenant: Tenant, user_id: str, session_id: str) -> Session:
    """Inside a transaction: the session, created when missing (savepoint keeps the outer
    transaction usable if a concurrent create wins)."""
    session = Session.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id).first()
    if session is not None:
        return session
    subject_write_check(tenant=tenant, user_id=user_id, category=PROCESS_STATE)
    try:
        with transaction.atomic():
            return Session.objects.create(tenant=tenant, user_id=user_id, session_id=session_id)
    except IntegrityError:
        return Session.objects.get(tenant=tenant, user_id=user_id, session_id=session_id)


def _update_live_session(
    session: Session, assignments: str = "", params: list[Any] = (), returning: str = "id"
) -> Any:
    """Run ``UPDATE session SET <assignments>, updated_at = now WHERE pk AND not ended RETURNING
    <returning>``: one round trip that locks the row. Raises if the session ended or is gone."""
    table = connection.ops.quote_name(Session._meta.db_table)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    sets = f"{assignments}, updated_at = %s" if assignments else "updated_at = %s"
    sql = f"UPDATE {table} SET {sets} WHERE id = %s AND ended_at IS NULL RETURNING {returning}"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, now, session.pk])
        row = cursor.fetchone()
    if row is None:
        _raise_not_live(session)
    return row[0]


def _lock_session(session: Session) -> Session:
    """Take the session's row lock (SELECT ... FOR UPDATE) and return its current row."""
    locked = Session.objects.select_for_update().filter(pk=session.pk).first()
    if locked is None:
        raise NotFound("Session not found.")
    return locked


def _raise_not_live(session: Session) -> None:
    if Session.objects.filter(pk=session.pk).exists():
        raise SessionEnded("The session has ended; it accepts no new messages, rounds or working state.")
    raise NotFound("Session not found.")


# --- Messages -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AppendResult:
    messages: list[Message]
    created: bool  # False when every message was a retry of one already stored


def _clean_content(value: Any, *, field: str) -> Any:
    if value is None or isinstance(value, str):
        return clean_json(value, field=field)
    if isinstance(value, list):
        for part in value:
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise InvalidInput.for_field(field, "each content part must be an object with a string 'type'.")
        return clean_json(value, field=field)
    raise InvalidInput.for_field(field, "must be a string, a list of typed parts, or null.")


def _clean_message(raw: Any, *, index: int) -> dict[str, Any]:
    prefix = f"messages[{index}]"
    if not isinstance(raw, dict):
        raise InvalidInput.for_field(prefix, "must be an object.")
    unknown = set(raw) - MESSAGE_FIELDS
    if unknown:
        raise InvalidInput.for_field(prefix, f"unknown fields: {', '.join(sorted(unknown))}.")
    client_id = raw.get("client_id")
    usage = raw.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise InvalidInput.for_field(f"{prefix}.usage", "must be a JSON object or null.")
    metadata = {} if raw.get("metadata") is None else raw["metadata"]
    return {
        "client_id": None if client_id is None else clean_identifier(client_id, field=f"{prefix}.client_id"),
        "role": clean_optional_label(raw.get("role"), field=f"{prefix}.role", max_length=32),
        "type": clean_optional_label(raw.get("type") or "message", field=f"{prefix}.type", max_length=32),
        "status": clean_optional_label(raw.get("status"), field=f"{prefix}.status", max_length=32),
        "name": clean_optional_label(raw.get("name"), field=f"{prefix}.name"),
        "content": _clean_content(raw.get("content"), field=f"{prefix}.content"),
        "metadata": clean_json(metadata, field=f"{prefix}.metadata", require_object=True),
        "usage": None if usage is None else clean_json(usage, field=f"{prefix}.usage"),
    }


def message_append(*, session: Session, messages: list[dict[str, Any]]) -> AppendResult:
    """Append one batch atomically; each message gets the next gap-free ``seq``.

    A message whose ``client_id`` is already stored in this session is a retry: it is not
    stored again and the stored message is returned in its place.
    """
    if not isinstance(messages, list) or not messages:
        raise InvalidInput.for_field("messages", "must be a non-empty list.")
    if len(messages) > MAX_MESSAGES_PER_APPEND:
        raise InvalidInput.for_field("messages", f"at most {MAX_MESSAGES_PER_APPEND} messages per append.")
    cleaned = [_clean_message(raw, index=i) for i, raw in enumerate(messages)]
    client_ids = [m["client_id"] for m in cleaned if m["client_id"] is not None]
    if len(set(client_ids)) != len(client_ids):
        raise InvalidInput.for_field("messages", "client_id values must be unique within one append.")
    if not client_ids and connection.vendor == "postgresql":
        return AppendResult(messages=_message_insert_postgresql(session, cleaned), created=True)
    return _message_append_locked(session, cleaned, client_ids)


_MESSAGE_COLUMNS = ("client_id", "role", "type", "status", "name", "content", "metadata", "usage")


def _message_insert_postgresql(session: Session, fresh: list[dict[str, Any]]) -> list[Message]:
    """Reserve the numbers and insert the batch in one statement, atomic by itself: one round
    trip instead of BEGIN, UPDATE, INSERT, COMMIT (docs/PERFORMANCE.md)."""
    now = timezone.now()
    fields = [Message._meta.get_field(name) for name in _MESSAGE_COLUMNS]
    row = "(" + ", ".join(["%s"] * (len(fields) + 1)) + ")"
    params: list[Any] = [len(fresh), now, session.pk, session.pk, session.tenant_id, session.user_id, len(fresh), now]
    for position, message in enumerate(fresh):
        params.append(position)
        params.extend(field.get_db_prep_save(message[field.name], connection) for field in fields)
    columns = ", ".join(_MESSAGE_COLUMNS)
    selected = ", ".join(
        f"v.{field.name}::jsonb" if field.get_internal_type() == "JSONField" else f"v.{field.name}" for field in fields
    )
    quote = connection.ops.quote_name
    sql = (
        f"WITH s AS (UPDATE {quote(Session._meta.db_table)} SET last_seq = last_seq + %s, updated_at = %s "
        f"WHERE id = %s AND ended_at IS NULL RETURNING last_seq) "
        f"INSERT INTO {quote(Message._meta.db_table)} (session_id, tenant_id, user_id, seq, created_at, {columns}) "
        f"SELECT %s, %s, %s, s.last_seq - %s + 1 + v.position, %s, {selected} "
        f"FROM s, (VALUES {', '.join([row] * len(fresh))}) AS v(position, {columns}) RETURNING id, seq"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        inserted = sorted(cursor.fetchall(), key=lambda r: r[1])
    if not inserted:
        _raise_not_live(session)
    created = []
    for (pk, seq), fields_ in zip(inserted, fresh):
        message = Message(
            id=pk, session=session, tenant_id=session.tenant_id, user_id=session.user_id, seq=seq, created_at=now, **fields_
        )
        message._state.adding, message._state.db = False, connection.alias
        created.append(message)
    return created


@transaction.atomic
def _message_append_locked(session: Session, cleaned: list[dict[str, Any]], client_ids: list[str]) -> AppendResult:
    """The portable append, and the one for retries: lock, find stored client ids, add the rest."""
    stored: dict[str, Message] = {}
    if client_ids:
        locked = _lock_session(session)  # serialises retries of the same client ids
        stored = {m.client_id: m for m in Message.objects.filter(session=session, client_id__in=client_ids)}
        if locked.ended_at is not None and len(stored) < len(cleaned):
            raise SessionEnded("The session has ended; it accepts no new messages, rounds or working state.")
    fresh = [m for m in cleaned if m["client_id"] is None or m["client_id"] not in stored]
    created: list[Message] = []
    if fresh:
        last_seq = _update_live_session(session, "last_seq = last_seq + %s", [len(fresh)], "last_seq")
        first_seq = last_seq - len(fresh) + 1
        created = Message.objects.bulk_create(
            Message(session=session, tenant_id=session.tenant_id, user_id=session.user_id, seq=first_seq + i, **fields)
            for i, fields in enumerate(fresh)
        )
    new_iter = iter(created)
    ordered = [
        stored[m["client_id"]] if m["client_id"] is not None and m["client_id"] in stored else next(new_iter)
        for m in cleaned
    ]
    return AppendResult(messages=ordered, created=bool(created))


# --- Rounds -------------------------------------------------------------------------------


def round_save(
    *,
    tenant: Tenant,
    user_id: str,
    state: dict[str, Any],
    session_id: str | None = None,
    round_id: int | None = None,
    expected_version: int | None = None,
) -> Round:
    """Save a state snapshot (the AgentScope ``save_state``): the session is created when
    missing (``session_id or "default"``); no ``round_id`` appends ``max + 1`` (or 1); a given
    ``round_id`` overwrites that round, and with ``expected_version`` only if it is unchanged."""
    user_id = clean_identifier(user_id, field="user_id")
    session_id = clean_identifier(session_id or selectors.DEFAULT_SESSION_ID, field="session_id")
    state = clean_json(state, field="state", require_object=True)
    if round_id is not None:
        round_id = clean_round_id(round_id)
    if round_id is None and expected_version is None and connection.vendor == "postgresql":
        saved = _round_append_postgresql(tenant=tenant, user_id=user_id, session_id=session_id, state=state)
        if saved is not None:
            return saved
    return _round_save_locked(
        tenant=tenant, user_id=user_id, state=state, session_id=session_id, round_id=round_id, expected_version=expected_version
    )


def _round_append_postgresql(*, tenant: Tenant, user_id: str, session_id: str, state: dict[str, Any]) -> Round | None:
    """The automatic round of a live session in one statement, atomic by itself: one round trip
    instead of SELECT, BEGIN, UPDATE, INSERT, COMMIT. None when the session is missing, ended or
    out of ids: the portable path then creates it or says why not."""
    now = timezone.now()
    quote = connection.ops.quote_name
    sql = (
        f"WITH s AS (UPDATE {quote(Session._meta.db_table)} SET last_round_id = last_round_id + 1, updated_at = %s "
        f"WHERE tenant_id = %s AND user_id = %s AND session_id = %s AND ended_at IS NULL AND last_round_id < %s "
        f"RETURNING id, last_round_id) "
        f"INSERT INTO {quote(Round._meta.db_table)} (session_id, tenant_id, user_id, round_id, state, created_at, updated_at, version) "
        f"SELECT s.id, %s, %s, s.last_round_id, %s, %s, %s, 1 FROM s RETURNING id, session_id, round_id"
    )
    state_db = Round._meta.get_field("state").get_db_prep_save(state, connection)
    with connection.cursor() as cursor:
        cursor.execute(sql, [now, tenant.pk, user_id, session_id, ROUND_ID_MAX, tenant.pk, user_id, state_db, now, now])
        row = cursor.fetchone()
    if row is None:
        return None
    saved = Round(
        id=row[0], session_id=row[1], tenant=tenant, user_id=user_id, round_id=row[2], state=state,
        created_at=now, updated_at=now, version=1,
    )
    saved._state.adding, saved._state.db = False, connection.alias
    return saved


@transaction.atomic
def _round_save_locked(
    *, tenant: Tenant, user_id: str, state: dict[str, Any], session_id: str, round_id: int | None, expected_version: int | None
) -> Round:
    session = _session_get_or_create(tenant=tenant, user_id=user_id, session_id=session_id)
    now = timezone.now()
    if round_id is None:
        if expected_version is not None:
            raise PreconditionFailed("If-Match needs an existing round: give its round_id.")
        new_id = _update_live_session(session, "last_round_id = last_round_id + 1", returning="last_round_id")
        if new_id > 2**31 - 1:
            raise InvalidInput.for_field("round_id", "no automatic round id is left above the largest one.")
        return Round.objects.create(
            session=session, tenant=tenant, user_id=user_id, round_id=new_id, state=state, created_at=now, updated_at=now
        )
    _update_live_session(
        session,
        "last_round_id = CASE WHEN last_round_id < %s THEN %s ELSE last_round_id END",
        [round_id, round_id],
        "last_round_id",
    )
    existing = Round.objects.filter(session=session, round_id=round_id).first()
    if expected_version is not None and (existing is None or existing.version != expected_version):
        raise PreconditionFailed("The round changed since you read it (If-Match does not match).")
    if existing is None:
        return Round.objects.create(
            session=session, tenant=tenant, user_id=user_id, round_id=round_id, state=state, created_at=now, updated_at=now
        )
    existing.state, existing.updated_at, existing.version = state, now, existing.version + 1
    existing.save(update_fields=["state", "updated_at", "version"])
    return existing


@transaction.atomic
def round_delete(*, session: Session, round_id: int) -> None:
    """Delete one round; the next automatic id stays ``max(remaining) + 1``."""
    locked = _lock_session(session)
    deleted, _ = Round.objects.filter(session=session, round_id=round_id).delete()
    if not deleted:
        raise NotFound(f"Round {round_id} not found.")
    if round_id >= locked.last_round_id:
        remaining = Round.objects.filter(session=session).aggregate(top=Max("round_id"))["top"] or 0
        Session.objects.filter(pk=session.pk).update(last_round_id=remaining)


# --- Checkpoints, transitions -------------------------------------------------------------


def checkpoint_create(
    *,
    session: Session,
    label: str,
    include_keys: list[str] | None = None,
    state: dict[str, Any] | None = None,
) -> Checkpoint:
    """Promote working state (all keys, or ``include_keys``; missing keys skipped) or a given
    state to a labelled checkpoint."""
    label = clean_identifier(label, field="label")
    if include_keys is not None and not isinstance(include_keys, list):
        raise InvalidInput.for_field("include_keys", "must be a list of keys.")
    if state is not None and include_keys:
        raise InvalidInput.for_field("include_keys", "give either state or include_keys, not both.")
    if state is None:
        current = selectors.working_state_get(session=session)
        if include_keys:
            keys = [clean_identifier(key, field="include_keys") for key in include_keys]
            state = {key: current[key] for key in keys if key in current}
        else:
            state = dict(current)
    else:
        state = clean_json(state, field="state", require_object=True)
    with transaction.atomic():
        # The row lock orders the insert with a delete or erasure of the session: one that won
        # makes this a clean NotFound instead of a foreign-key error at commit.
        _lock_session(session)
        return Checkpoint.objects.create(
            session=session, tenant_id=session.tenant_id, user_id=session.user_id, label=label, state=state
        )


def transition_record(
    *,
    session: Session,
    to_agent: str,
    from_agent: str = "",
    reason: str = "",
    metadata: dict[str, Any] | None = None,
) -> AgentTransition:
    """Record a hand-off between agents; an ended session takes no new activity."""
    if not isinstance(reason, str):
        raise InvalidInput.for_field("reason", "must be a string.")
    transition = AgentTransition(
        session=session,
        tenant_id=session.tenant_id,
        user_id=session.user_id,
        from_agent=clean_optional_label(from_agent, field="from_agent"),
        to_agent=clean_identifier(to_agent, field="to_agent"),
        reason=clean_json(reason, field="reason"),
        metadata=clean_json(metadata or {}, field="metadata", require_object=True),
    )
    with transaction.atomic():
        _update_live_session(session)
        transition.save()
    return transition


# --- Working state ------------------------------------------------------------------------


@transaction.atomic
def working_state_patch(*, session: Session, changes: dict[str, Any]) -> dict[str, Any]:
    """Merge top-level keys into the working state (``None`` removes a key); returns the result."""
    changes = clean_json(changes, field="working_state", require_object=True)
    for key in changes:
        clean_identifier(key, field="working_state")
    _update_live_session(session)
    return working_state.get_store().patch(session.pk, changes)


@transaction.atomic
def working_state_replace(*, session: Session, data: dict[str, Any]) -> dict[str, Any]:
    """Replace the whole working state."""
    data = clean_json(data, field="working_state", require_object=True)
    for key in data:
        clean_identifier(key, field="working_state")
    _update_live_session(session)
    return working_state.get_store().replace(session.pk, data)


def working_state_clear(*, session: Session) -> None:
    working_state.get_store().clear(session.pk)


def working_state_purge_expired() -> int:
    """Delete working state whose TTL has passed (the periodic sweep of the database store; Redis
    expires keys itself). Returns how many entries went."""
    return working_state.get_store().purge_expired()


# --- Erasure of one data subject's process state ------------------------------------------


@transaction.atomic
def subject_process_state_erase(*, tenant: Tenant, user_id: str) -> dict[str, int]:
    """Delete every session of the subject with its messages, rounds, checkpoints, transitions and
    working state; returns counts per category. Called by userdata_app.erasure inside its
    transaction.

    The subject's session rows are locked first, so an append or round save that is running
    finishes before, and one that starts later finds the session gone. Bulk deletes: a fixed
    number of statements whatever the number of rows."""
    sessions = Session.objects.filter(tenant=tenant, user_id=user_id)
    session_pks = list(sessions.select_for_update().values_list("pk", flat=True))
    counts = {"working_state": working_state.get_store().count_many(session_pks)}
    working_state.get_store().clear_many(session_pks)
    in_sessions = {"session_id__in": sessions.values("pk")}
    for category, model in (
        ("messages", Message),
        ("rounds", Round),
        ("checkpoints", Checkpoint),
        ("transitions", AgentTransition),
    ):
        counts[category] = model.objects.filter(**in_sessions).delete()[0]
    counts["sessions"] = sessions.delete()[1].get(Session._meta.label, 0)
    return counts
