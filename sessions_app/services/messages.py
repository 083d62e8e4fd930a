"""Appends to a session's message history.

Ordering rule: the per-session counter (message ``seq``) is reserved with one ``UPDATE session
... RETURNING`` that also takes the session's row lock (and keeps ``message_count`` true), so
numbers are gap-free between edits (services/history.py), never reused, and the append fails
cleanly once the session has ended.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from agentstate.exceptions import InvalidInput, SessionEnded
from agentstate.statements import prepared_cursor
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_json, clean_optional_label
from sessions_app.models import Message, Session
from sessions_app.selectors.sessions import session_get
from sessions_app.services.live import (
    activity_update_sql,
    raise_not_live,
    session_touch,
    update_live_session,
)

MAX_MESSAGES_PER_APPEND = 500
PREPARED_MAX_MESSAGES = 8  # appends of up to this many messages go prepared (agentstate.statements)
MESSAGE_FIELDS = {"client_id", "role", "type", "status", "name", "content", "metadata", "usage"}


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
    cleaned, client_ids = _batch_clean(messages)
    if connection.vendor == "postgresql":
        inserted = _message_insert_postgresql(_BY_PK, [session.pk], cleaned, client_ids)
        if inserted is not None:
            return AppendResult(messages=inserted, created=True)
        if not client_ids:
            raise_not_live(session)
    return _message_append_locked(session, cleaned, client_ids)


def message_append_to(*, tenant: Tenant, user_id: str, session_id: str, messages: list[dict[str, Any]]) -> AppendResult:
    """``message_append`` to the REST API's session ``session_id`` of ``user_id``: on PostgreSQL
    the session is found by the append's own statement (one round trip, not a lookup and then
    the append); a batch that statement does not store (a retry, an ended or missing session)
    looks the session up and takes the portable way."""
    cleaned, client_ids = _batch_clean(messages)
    if connection.vendor == "postgresql":
        inserted = _message_insert_postgresql(_BY_IDENTITY, [tenant.pk, user_id, session_id], cleaned, client_ids)
        if inserted is not None:
            return AppendResult(messages=inserted, created=True)
    session = session_get(tenant=tenant, user_id=user_id, session_id=session_id)
    if connection.vendor == "postgresql" and not client_ids:
        raise_not_live(session)
    return _message_append_locked(session, cleaned, client_ids)


def _batch_clean(messages: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """The batch's messages cleaned, and their client ids (unique within it)."""
    if not isinstance(messages, list) or not messages:
        raise InvalidInput.for_field("messages", "must be a non-empty list.")
    if len(messages) > MAX_MESSAGES_PER_APPEND:
        raise InvalidInput.for_field("messages", f"at most {MAX_MESSAGES_PER_APPEND} messages per append.")
    cleaned = [_clean_message(raw, index=i) for i, raw in enumerate(messages)]
    client_ids = [m["client_id"] for m in cleaned if m["client_id"] is not None]
    if len(set(client_ids)) != len(client_ids):
        raise InvalidInput.for_field("messages", "client_id values must be unique within one append.")
    return cleaned, client_ids


_MESSAGE_COLUMNS = ("client_id", "role", "type", "status", "name", "content", "metadata", "usage")
# How the one-statement append names its session: by primary key, or by the REST API's identity.
_BY_PK = "id = %s"
_BY_IDENTITY = "tenant_id = %s AND user_id = %s AND session_id = %s AND app_name = ''"


def _message_insert_postgresql(
    session_is: str, session_params: list[Any], fresh: list[dict[str, Any]], client_ids: list[str]
) -> list[Message] | None:
    """Reserve the numbers and insert the batch in one statement, atomic by itself: one round
    trip instead of BEGIN, UPDATE, INSERT, COMMIT (docs/PERFORMANCE.md), for the session that
    ``session_is`` (SQL over its row) names. None when it stored nothing: no such session, the
    session is not live, or (with client ids) one of them is stored already, which the locked
    append sorts out. A retry racing its first try past the NOT EXISTS meets the unique index on
    client ids: the statement fails whole, and the locked append finds them."""
    # Raw: benchmarks/http_load.py append p99 target, scaling.py append ratio; one statement per append
    now = timezone.now()
    concrete = {field.name: field for field in Message._meta.concrete_fields}
    fields = [concrete[name] for name in _MESSAGE_COLUMNS]
    row = "(" + ", ".join(["%s"] * (len(fields) + 1)) + ")"
    quote = connection.ops.quote_name
    sessions, messages = quote(Session._meta.db_table), quote(Message._meta.db_table)
    not_stored = ""
    if client_ids:
        not_stored = (
            f" AND NOT EXISTS (SELECT 1 FROM {messages} m WHERE m.session_id = {sessions}.id "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
            f"AND m.client_id IN ({', '.join(['%s'] * len(client_ids))}))"
        )
    params: list[Any] = [len(fresh), len(fresh), now, *session_params, *client_ids, len(fresh), now]
    for position, values in enumerate(fresh):
        params.append(position)
        params.extend(field.get_db_prep_save(values[field.name], connection) for field in fields)
    columns = ", ".join(_MESSAGE_COLUMNS)
    update = activity_update_sql(
        sets="last_seq = last_seq + %s, message_count = message_count + %s",
        where=f"{session_is}{not_stored}",
        returning="id, tenant_id, user_id, last_seq",
    )
    selected = ", ".join(
        f"v.{field.name}::jsonb" if field.get_internal_type() == "JSONField" else f"v.{field.name}" for field in fields
    )
    sql = (
        f"WITH s AS ({update}) "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"INSERT INTO {messages} (session_id, tenant_id, user_id, seq, created_at, {columns}) "
        f"SELECT s.id, s.tenant_id, s.user_id, s.last_seq - %s + 1 + v.position, %s, {selected} "
        f"FROM s, (VALUES {', '.join([row] * len(fresh))}) AS v(position, {columns}) "
        "RETURNING id, seq, session_id, tenant_id, user_id"
    )
    # Inside a caller's transaction a failure must not abort it: a savepoint (a request runs in
    # autocommit, where the statement alone is atomic and no round trip is added).
    savepoint = transaction.atomic() if connection.in_atomic_block else nullcontext()
    # A turn's few messages go prepared (one plan per count, kept on the connection); an import's
    # hundreds, client-bound: each count would be a plan of its own.
    cursor = prepared_cursor() if len(fresh) <= PREPARED_MAX_MESSAGES else connection.cursor()
    try:
        with savepoint, cursor:
            cursor.execute(sql, params)
            inserted = sorted(cursor.fetchall(), key=lambda r: r[1])
    except IntegrityError:
        return None
    if not inserted:
        return None
    created = []
    for (pk, seq, session_pk, tenant_pk, user_id), fields_ in zip(inserted, fresh, strict=True):
        message = Message(
            id=pk, session_id=session_pk, tenant_id=tenant_pk, user_id=user_id, seq=seq, created_at=now, **fields_
        )
        message._state.adding, message._state.db = False, connection.alias
        created.append(message)
    return created


@transaction.atomic
def _message_append_locked(session: Session, cleaned: list[dict[str, Any]], client_ids: list[str]) -> AppendResult:
    """The portable append, and the one for retries: lock, find stored client ids, add the rest."""
    stored: dict[str, Message] = {}
    if client_ids:
        locked = session_touch(session)  # serialises retries of the same client ids
        found = Message.objects.filter(session=session, client_id__in=client_ids)
        stored = {m.client_id: m for m in found if m.client_id is not None}
        if locked.ended_at is not None and len(stored) < len(cleaned):
            raise SessionEnded("The session has ended; it accepts no new messages, rounds or working state.")
    fresh = [m for m in cleaned if m["client_id"] is None or m["client_id"] not in stored]
    created: list[Message] = []
    if fresh:
        last_seq = update_live_session(
            session, "last_seq = last_seq + %s, message_count = message_count + %s", [len(fresh)] * 2, "last_seq"
        )
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
