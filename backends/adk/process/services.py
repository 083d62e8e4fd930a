"""Writes of ADK sessions: create, and append an event with its session and app state deltas
(a delete is sessions_app's ``session_delete``, as for any session).

ADK's semantics win here (docs/DESIGN.md, "Framework backends"): a writer holding a session older
than the stored one gets ``StaleSession``, as ADK's database and SQLite services raise
``StaleSessionError``; an event id the session already holds gets ``EventAlreadyExists``, as
their primary key on (session, event id) refuses it. The ``user:`` parts are returned to the
caller (backends.adk), which stores them as user data in the same transaction.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.models import F
from django.utils import timezone

from agentstate.exceptions import Conflict, InvalidInput, NotFound, SessionAlreadyExists
from agentstate.statements import execute_all, prepared_cursor
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_timestamp
from backends.adk.process.models import ADK_EVENT_ID_INDEXED, AdkAppState, AdkEvent
from backends.adk.process.state import USER_PREFIX, json_object, json_text, state_split
from sessions_app.models import Session
from sessions_app.selectors import IMPORTED, model_columns, row_as_model
from sessions_app.services.live import activity_changes, activity_update_sql, refuse_if_ended
from sessions_app.services.sessions import new_session_id_clean, session_insert

FRAMEWORK = "adk"
TEXT_PREVIEW_LENGTH = 500


class StaleSession(Conflict):
    """The writer's session is older than the stored one: reload it, then append."""

    code = "stale_session"


@dataclass(frozen=True)
class AdkSessionCreated:
    session: Session
    user_delta: dict[str, Any]  # the user: keys of the initial state, for the caller to store
    extra: tuple[Any, ...] | None  # the create's ``columns``; None when not read, or the create changes them


def adk_session_create_transaction(state: dict[str, Any], *, savepoint: bool = True) -> AbstractContextManager[Any]:
    """The transaction a create of ``state``, with its caller's store of the ``user:`` part, runs
    in: in autocommit on PostgreSQL, none for a state without ``app:`` or ``user:`` keys, whose
    create is one round trip that is a transaction of its own (``session_insert``'s, the erasure
    check's lock lasting until its end), so that no BEGIN and COMMIT go with it; else one."""
    parts = state_split(state)
    alone = not parts["app"] and not parts["user"]
    if alone and connection.vendor == "postgresql" and not connection.in_atomic_block:
        return nullcontext()
    return transaction.atomic(savepoint=savepoint)


def adk_session_create(
    *,
    tenant: Tenant,
    app_name: str,
    user_id: str,
    session_id: str | None,
    state: dict[str, Any],
    columns: str = "",
    params: Sequence[Any] = (),
) -> AdkSessionCreated:
    """A new ADK session; its id stripped and a blank one a UUID (as ADK's own services do), an
    existing one a conflict. The initial state's ``app:`` keys update the app's state, its
    session keys become the session's. ``columns``: SQL over the new row read by its insert
    (``session_insert``); ``extra`` is None when the create changes what they read (``app:`` keys
    it stores, ``user:`` keys its caller stores) or the database read none. It runs in
    ``adk_session_create_transaction(state)``, which the caller opens when it stores more."""
    app_name = clean_identifier(app_name, field="app_name")
    user_id = clean_identifier(user_id, field="user_id")
    session_id = new_session_id_clean(session_id, field="session_id")
    parts = state_split(state)
    now = timezone.now()
    session = Session(
        tenant=tenant,
        user_id=user_id,
        session_id=session_id,
        app_name=app_name,
        framework=FRAMEWORK,
        durable_state=json_text(parts["session"]),
        last_update_time=time.time(),
        created_at=now,
        updated_at=now,
    )
    with adk_session_create_transaction(state, savepoint=False):  # a failure rolls back the caller's anyway
        try:
            extra = session_insert(session, columns=columns, params=params, checked=True)  # with the erasure check
        except IntegrityError:  # the transaction is rolled back: this error leaves it
            raise SessionAlreadyExists(f"Session with id {session_id!r} already exists.") from None
        if parts["app"]:
            _app_state_update(tenant_id=tenant.pk, app_name=app_name, delta=parts["app"])
    changed = parts["app"] or parts["user"]
    return AdkSessionCreated(session=session, user_delta=parts["user"], extra=None if changed else extra)


@dataclass(frozen=True)
class AdkSessionImported:
    user_deltas: list[tuple[int, dict[str, Any]]]  # (event seq, its user: keys), for the caller to store
    user_state: dict[str, Any]  # the user: keys of the old store's state, for the caller to store


@transaction.atomic(savepoint=False)  # a failure rolls back the caller's whole transaction anyway
def adk_session_import(
    *,
    session: Session,
    events: list[dict[str, Any]],
    state: dict[str, Any],
    last_update_time: float,
    source: str = "",
    created_at: datetime | None = None,
) -> AdkSessionImported:
    """Add a session's events from its old store (``import_sessions``) in bulk, after the ones it
    holds, and make its state the one the old store held: its deltas are not replayed, the old
    store's state is the result of them. The session's keys replace the stored ones, the ``app:``
    keys update the app's state, the session takes the old store's ``last_update_time`` and a new
    version, so cached readers reload. Each event is stored as an append stores it (its ``user:``
    delta apart, returned with the ``user:`` state for the caller to store). A session the import
    creates (``source``, the store's kind) takes the store's creation time, when it is known, and
    records where and when it was imported (``selectors.session_imported``)."""
    now = timezone.now()
    first_import: dict[str, Any] = {}
    if source:
        imported = {"from": source, "at": now.isoformat(), "created_in_store": created_at is not None}
        first_import = {"created_at": created_at or now, "metadata": {**session.metadata, IMPORTED: imported}}
    rows, user_deltas, seq = [], [], session.last_seq
    for event in events:
        timestamp, delta = _event_fields(event)
        seq += 1
        user_part = state_split(delta)["user"]
        if user_part:
            event["actions"]["state_delta"] = {k: v for k, v in delta.items() if not k.startswith(USER_PREFIX)}
            user_deltas.append((seq, user_part))
        rows.append(
            AdkEvent(
                session=session,
                tenant_id=session.tenant_id,
                user_id=session.user_id,
                seq=seq,
                event_id=_text(event["id"]),
                invocation_id=_text(event.get("invocation_id")),
                author=_text(event.get("author")),
                timestamp=timestamp,
                text=_preview(event),
                data=json_text(event),
            )
        )
    AdkEvent.objects.bulk_create(rows, batch_size=500)
    parts = state_split(state)
    Session.objects.filter(pk=session.pk).update(
        durable_state=json_text(parts["session"]),
        last_update_time=clean_timestamp(last_update_time, field="last_update_time"),
        last_seq=seq,
        version=F("version") + 1,
        **first_import,
        **activity_changes(now),
    )
    if parts["app"]:
        _app_state_update(tenant_id=session.tenant_id, app_name=session.app_name, delta=parts["app"])
    return AdkSessionImported(user_deltas=user_deltas, user_state=parts["user"])


@dataclass(frozen=True)
class AdkEventAppended:
    session_pk: int
    seq: int  # the event's append number
    version: int  # the session's, after the append
    last_update_time: float
    user_delta: dict[str, Any]  # the user: keys of the event's delta, for the caller to store


def adk_event_append_one_statement(
    *,
    tenant: Tenant,
    app_name: str,
    user_id: str,
    session_id: str,
    event: dict[str, Any],
    expected_version: int,
    last_update_time: float | None = None,
) -> AdkEventAppended | None:
    """The common append in one round trip, atomic by itself (PostgreSQL): an event without state
    delta from a writer that names the version it read. The session's counters move and the event
    is inserted in one statement, only if the version (and ``last_update_time``, if given) still
    match and the session does not hold the event's id. None when that did not apply or stored
    nothing: ``adk_event_append`` (in a transaction) then stores it or says why not (not found,
    stale, an id the session holds)."""
    # Raw: benchmarks/frameworks.py ADK append_event and turn targets; event and activity in one statement
    timestamp, delta = _event_fields(event)
    if connection.vendor != "postgresql" or any(state_split(delta).values()):
        return None
    event_id = _text(event["id"])
    quote = connection.ops.quote_name
    session_table, event_table = quote(Session._meta.db_table), quote(AdkEvent._meta.db_table)
    # A concurrent append bumps the version: PostgreSQL re-checks `version = %s` on the row it waited
    # for, so of two writers holding one version, one appends and the other stores nothing.
    read_time = "" if last_update_time is None else "AND last_update_time = %s "
    update = activity_update_sql(
        sets="last_seq = last_seq + 1, version = version + 1, last_update_time = %s",
        where=(
            "tenant_id = %s AND user_id = %s AND session_id = %s AND app_name = %s AND framework = %s "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
            f"AND version = %s {read_time}"
            f"AND NOT EXISTS (SELECT 1 FROM {event_table} e WHERE e.session_id = {session_table}.id "
            f"AND SUBSTRING(e.event_id, 1, {ADK_EVENT_ID_INDEXED}) = %s AND e.event_id = %s)"
        ),
        returning="id, tenant_id, user_id, last_seq",
    )
    sql = (
        f"WITH s AS ({update}) "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"INSERT INTO {event_table} (session_id, tenant_id, user_id, created_at, seq, event_id, invocation_id, "
        f"author, timestamp, text, data) "
        f"SELECT s.id, s.tenant_id, s.user_id, %s, s.last_seq, %s, %s, %s, %s, %s, %s FROM s RETURNING session_id, seq"
    )
    now = timezone.now()
    params: list[Any] = [
        timestamp,
        now,
        tenant.pk,
        user_id,
        session_id,
        app_name,
        FRAMEWORK,
        expected_version,
        *([] if last_update_time is None else [last_update_time]),
        event_id[:ADK_EVENT_ID_INDEXED],
        event_id,
        now,
        event_id,
        _text(event.get("invocation_id")),
        _text(event.get("author")),
        timestamp,
        _preview(event),
        json_text(event),
    ]
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    return AdkEventAppended(
        session_pk=row[0], seq=row[1], version=expected_version + 1, last_update_time=timestamp, user_delta={}
    )


@transaction.atomic(savepoint=False)  # a failure rolls back the caller's whole transaction anyway
def adk_event_append(
    *,
    tenant: Tenant,
    app_name: str,
    user_id: str,
    session_id: str,
    event: dict[str, Any],
    expected_version: int | None = None,
    last_update_time: float | None = None,
    last_event_id: str | None = None,
) -> AdkEventAppended:
    """Store one event with its session and app state deltas, under the session's row lock.

    Stale writers are refused as ADK's database service refuses them: by the version the writer
    last read (``expected_version``, with the ``last_update_time`` it read if given), or, for a
    session object that never carried one, when the stored session moved past ``last_update_time``
    to an event other than ``last_event_id``. Two written-out round trips on PostgreSQL besides
    the transaction's (the lock with the event id's lookup, then the writes), where the ORM's four
    made an append with a state delta three times one without (docs/PERFORMANCE.md)."""
    timestamp, delta = _event_fields(event)
    event_id = _text(event["id"])
    locked, same_prefix = _lock_with_event_ids(
        identity=[tenant.pk, user_id, session_id, app_name, FRAMEWORK], event_id=event_id
    )
    refuse_if_ended(locked)
    _check_not_stale(locked, expected_version, last_update_time, last_event_id)
    # The whole id is compared here: the index holds a prefix of each id (a whole long id would
    # not fit in a PostgreSQL index row). Ids sharing their first 100 characters are rare.
    if event_id in same_prefix:
        raise EventAlreadyExists(f"The session already holds an event with id {event['id']!r}.")
    parts = state_split(delta)
    if parts["user"]:  # user: values are user data: the stored event never holds them
        event["actions"]["state_delta"] = {
            key: value for key, value in delta.items() if not key.startswith(USER_PREFIX)
        }
    session_state = json_object(locked.durable_state)
    session_state.update(parts["session"])
    # The event is activity: it moves updated_at and reopens a session retention ended.
    locked.last_seq += 1
    locked.version += 1
    at = connection.ops.adapt_datetimefield_value(timezone.now())
    quote = connection.ops.quote_name
    execute_all(
        (
            activity_update_sql(
                sets="durable_state = %s, last_update_time = %s, last_seq = %s, version = %s",
                where="id = %s",
                writable=False,  # refuse_if_ended read the row this lock holds
            ),
            [json_text(session_state), timestamp, locked.last_seq, locked.version, at, locked.pk],
        ),
        (
            f"INSERT INTO {quote(AdkEvent._meta.db_table)} (session_id, tenant_id, user_id, created_at, seq, "  # noqa: S608 (as above)
            f"event_id, invocation_id, author, timestamp, text, data) VALUES ({', '.join(['%s'] * 11)})",
            [
                *(locked.pk, locked.tenant_id, locked.user_id, at, locked.last_seq, event_id),
                *(_text(event.get("invocation_id")), _text(event.get("author")), timestamp),
                *(_preview(event), json_text(event)),
            ],
        ),
    )
    if parts["app"]:
        _app_state_update(tenant_id=locked.tenant_id, app_name=locked.app_name, delta=parts["app"])
    return AdkEventAppended(
        session_pk=locked.pk,
        seq=locked.last_seq,
        version=locked.version,
        last_update_time=timestamp,
        user_delta=parts["user"],
    )


_SESSION_BY_IDENTITY = "tenant_id = %s AND user_id = %s AND session_id = %s AND app_name = %s AND framework = %s"


def _lock_with_event_ids(*, identity: list[Any], event_id: str) -> tuple[Session, list[str]]:
    """Inside a transaction: the ADK session of ``identity`` under its row lock, and the ids of its
    events that share ``event_id``'s indexed prefix. On PostgreSQL both statements go in one round
    trip, the lookup a statement of its own after the lock (READ COMMITTED: it sees an event a
    concurrent append committed while the lock waited)."""
    sessions = connection.ops.quote_name(Session._meta.db_table)
    for_update = " FOR UPDATE" if connection.features.has_select_for_update else ""  # SQLite: the write lock
    lock = (
        f"SELECT {model_columns(Session, 's')} FROM {sessions} s WHERE {_SESSION_BY_IDENTITY}{for_update}",  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        identity,
    )
    row, ids_found = execute_all(lock, event_ids_statement(identity=identity, event_id=event_id))
    if not row:
        raise NotFound("Session not found.")
    return row_as_model(Session, connections[DEFAULT_DB_ALIAS], row[0]), [found for (found,) in ids_found]


def event_ids_statement(*, identity: list[Any], event_id: str) -> tuple[str, list[Any]]:
    """The ids of the events of the ADK session of ``identity`` sharing ``event_id``'s indexed
    prefix, as SQL and parameters, read on the (session, prefix) index: the prefix's bounds are
    written into the text as the index's DDL has them. SQLite matches an expression index only
    against the same literals; sent as parameters (Django's ``Substr``), it scanned every event."""
    sessions, events = (
        connection.ops.quote_name(Session._meta.db_table),
        connection.ops.quote_name(AdkEvent._meta.db_table),
    )
    substring = "SUBSTR" if connection.vendor == "sqlite" else "SUBSTRING"
    return (
        f"SELECT event_id FROM {events} WHERE session_id = (SELECT id FROM {sessions} WHERE {_SESSION_BY_IDENTITY}) "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"AND {substring}(event_id, 1, {ADK_EVENT_ID_INDEXED}) = %s",
        [*identity, event_id[:ADK_EVENT_ID_INDEXED]],
    )


def _check_not_stale(
    locked: Session, expected_version: int | None, last_update_time: float | None, last_event_id: str | None
) -> None:
    if expected_version is not None:
        # A session deleted and created again under its id counts its versions anew: the time the
        # writer read tells the two apart, as it is ADK's database service's whole marker.
        if expected_version != locked.version or last_update_time not in (None, locked.last_update_time):
            raise StaleSession(
                "The session has been modified in storage since it was loaded. "
                "Please reload the session before appending more events."
            )
        return
    if last_update_time is None or locked.last_update_time is None or locked.last_update_time <= last_update_time:
        return
    latest = (
        AdkEvent.objects.filter(session=locked)
        .order_by("-timestamp", "-seq")
        .values_list("event_id", flat=True)
        .first()
    )
    if latest != (None if last_event_id is None else _text(last_event_id)):
        raise StaleSession(
            "The last_update_time provided in the session object is earlier than the update_time in "
            "storage. Please check if it is a stale session."
        )


class EventAlreadyExists(Conflict):
    """The session already holds an event with this id."""

    code = "event_exists"


def _event_fields(event: Any) -> tuple[float, dict[str, Any]]:
    """The timestamp and state delta of an event ADK dumped (field names, not aliases)."""
    if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not event["id"]:
        raise InvalidInput.for_field("event", "must be an ADK event with an id.")
    timestamp = clean_timestamp(event.get("timestamp"), field="event.timestamp")
    actions = event.setdefault("actions", {})
    if not isinstance(actions, dict):
        raise InvalidInput.for_field("event.actions", "must be an object.")
    delta = actions.get("state_delta") or {}
    if not isinstance(delta, dict):
        raise InvalidInput.for_field("event.actions.state_delta", "must be an object.")
    return timestamp, delta


def _text(value: Any) -> str:
    """A column copy of an event field. The event itself is stored whole as JSON text; a column
    cannot hold NUL or a lone surrogate (PostgreSQL refuses both), so they are replaced here."""
    if not isinstance(value, str):
        return ""
    return value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _preview(event: dict[str, Any]) -> str:
    """The content's text parts, for the admin and search (the whole event stays in ``data``)."""
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    texts = [part["text"] for part in parts or [] if isinstance(part, dict) and isinstance(part.get("text"), str)]
    return _text("\n".join(texts)[:TEXT_PREVIEW_LENGTH])


def _app_state_update(*, tenant_id: int, app_name: str, delta: dict[str, Any]) -> None:
    """dict.update() of the app's state under its row lock (created on first use)."""
    rows = AdkAppState.objects.select_for_update().filter(tenant_id=tenant_id, app_name=app_name)
    row = rows.first()
    if row is None:
        try:
            with transaction.atomic():
                row = AdkAppState.objects.create(tenant_id=tenant_id, app_name=app_name, state="{}")
        except IntegrityError:  # created meanwhile by another writer
            row = rows.get()
    state = json_object(row.state)
    state.update(delta)
    AdkAppState.objects.filter(pk=row.pk).update(state=json_text(state), updated_at=timezone.now())
