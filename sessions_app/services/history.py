"""Edits of a session's message history: pop the last message, rewind, clear, and fork.

Rules (docs/DESIGN.md, "The domain": messages and history edits): each edit is one transaction
under the session's row lock, so edits and appends of one session run one at a time; ``seq``
numbers are never reused (an edit leaves a gap, the counter ``last_seq`` never goes back) and every
edit that removes something advances ``history_generation``, so an incremental reader can tell its
copy is stale. An edit can name the newest ``seq`` its caller saw (``expected_last_seq``): if the
history's newest message is another one, nothing changes (``PreconditionFailed``). Ended sessions
refuse edits; fork only reads its source, so an ended session can be forked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.models import F, Max, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from agentstate import subject_data
from agentstate.exceptions import Held, InvalidInput, NotFound, PreconditionFailed, SessionAlreadyExists, SessionEnded
from agentstate.holds.selectors import COVERING_HOLD_SQL
from agentstate.holds.services import holds_lock_key, holds_lock_required
from agentstate.statements import execute_all, prepared_cursor
from agentstate.subjects import PROCESS_STATE, subject_write_check
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_json, clean_round_id
from sessions_app.models import Message, MessagePop, Round, RunUsage, Session
from sessions_app.selectors.export import message_as_dict
from sessions_app.selectors.rows import column_converter, model_columns, row_as_model
from sessions_app.selectors.sessions import session_get
from sessions_app.services.live import activity_update_sql, lock_session, session_hold_check, session_touch
from sessions_app.services.sessions import new_session_id_clean
from sessions_app.services.usage import run_usage_drop_removed_turns

SEQ_MAX = 2**63 - 1
ENDED = "The session has ended; its history cannot be edited."


@dataclass(frozen=True)
class HistoryEdit:
    session: Session  # as it is after the edit (counters, generation)
    removed_messages: int
    removed_rounds: int


def _clean_seq(value: Any, *, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SEQ_MAX:
        raise InvalidInput.for_field(field, f"must be an integer from 0 to {SEQ_MAX}.")
    return value


def _newest_seq(session: Session) -> int:
    """The ``seq`` of the newest stored message, 0 for an empty history (the (session, seq) index)."""
    return Message.objects.filter(session=session).order_by("-seq").values_list("seq", flat=True).first() or 0


def _check_last_seen(newest: int, expected_last_seq: int | None) -> None:
    if expected_last_seq is not None and newest != expected_last_seq:
        raise PreconditionFailed(
            f"The history has moved on: its newest message is seq {newest}, not {expected_last_seq}; nothing changed.",
            fields={"expected_last_seq": [f"The newest message is seq {newest}."]},
        )


def _lock_live(session: Session) -> Session:
    locked = session_touch(session)
    if locked.ended_at is not None:
        raise SessionEnded(ENDED)
    return locked


def _record_edit(session: Session, *, removed_messages: int, removed_rounds: int) -> None:
    """Keep the counters true after an edit (one UPDATE), and the usage of the turns it removed goes;
    an edit that removed nothing changed nothing."""
    if not removed_messages and not removed_rounds:
        return
    changes: dict[str, Any] = {
        "message_count": F("message_count") - removed_messages,
        "history_generation": F("history_generation") + 1,
    }
    if removed_rounds:  # the next automatic round stays max(remaining) + 1
        top = Round.objects.filter(session_id=session.pk).order_by("-round_id").values("round_id")[:1]
        changes["last_round_id"] = Coalesce(Subquery(top), 0)
    Session.objects.filter(pk=session.pk).update(**changes)
    if removed_messages:
        run_usage_drop_removed_turns(session)


@transaction.atomic
def message_pop(
    *, session: Session, idempotency_key: str | None = None, expected_last_seq: int | None = None
) -> dict[str, Any] | None:
    """Remove and return the newest message (as the API shows it), or None for an empty history.

    Pops of one session are serialised by its row lock, so concurrent pops each get a different
    message or None. With ``idempotency_key``, the answer is kept: a retry with the same key
    returns it again and pops nothing. Three statements on PostgreSQL at any history size: the
    row lock with the hold lock, the checks with the newest message, the edit."""
    key, expected_last_seq = _pop_arguments(idempotency_key, expected_last_seq)
    locked = session_touch(session, holds_lock_shared=True)
    newest, found = _pop_read(session, key)
    return _pop(locked, newest, found, key=key, expected_last_seq=expected_last_seq)


@transaction.atomic
def message_pop_from(
    *,
    tenant: Tenant,
    user_id: str,
    session_id: str,
    idempotency_key: str | None = None,
    expected_last_seq: int | None = None,
) -> dict[str, Any] | None:
    """``message_pop`` of the REST API's session ``session_id`` of ``user_id``. On PostgreSQL the
    session is found by its lock, and the lock and the pop's read go in one round trip (two
    statements, the read after the lock): with the edit, a pop is three round trips besides the
    transaction's, where a lookup, the lock and the read were one each."""
    # Raw: benchmarks/frameworks.py SDK pop_item per-call target: lock and read in one round trip
    key, expected_last_seq = _pop_arguments(idempotency_key, expected_last_seq)  # first, on every database
    if connection.vendor != "postgresql":
        session = session_get(tenant=tenant, user_id=user_id, session_id=session_id)
        return message_pop(session=session, idempotency_key=key, expected_last_seq=expected_last_seq)
    holds_lock_required()
    database = connections[DEFAULT_DB_ALIAS]
    params = {
        "now": connection.ops.adapt_datetimefield_value(timezone.now()),
        "tenant": tenant.pk,
        "user_id": user_id,
        "session_id": session_id,
        "holds": holds_lock_key(tenant.pk),
        "key": key,
    }
    touched, (read,) = execute_all((_POP_LOCK_SQL, params), (_POP_READ_LOCKED_SQL, params))
    if not touched:
        raise NotFound("Session not found.")
    locked = row_as_model(Session, database, touched[0][: len(Session._meta.concrete_fields)])
    newest, found = _pop_found(database, read)
    return _pop(locked, newest, found, key=key, expected_last_seq=expected_last_seq)


def _pop_arguments(idempotency_key: str | None, expected_last_seq: int | None) -> tuple[str | None, int | None]:
    key = None if idempotency_key is None else clean_identifier(idempotency_key, field="idempotency_key")
    if expected_last_seq is not None:
        expected_last_seq = _clean_seq(expected_last_seq, field="expected_last_seq")
    return key, expected_last_seq


def _pop(
    session: Session,
    newest: Message | None,
    found: dict[str, Any],
    *,
    key: str | None,
    expected_last_seq: int | None,
) -> dict[str, Any] | None:
    """The pop's rules and its edit, under the session's row lock (``session`` as locked)."""
    if key is not None and found["answered"]:
        return found["answer"]
    if session.ended_at is not None:
        raise SessionEnded(ENDED)
    if found["hold_reference"] is not None:
        raise Held.of(found["hold_reference"], what="this session's messages")
    _check_last_seen(0 if newest is None else newest.seq, expected_last_seq)
    popped = None if newest is None else message_as_dict(newest)
    if newest is not None and connection.vendor == "postgresql":
        _pop_postgresql(session, newest, key=key, popped=popped)
        return popped
    if newest is not None:
        Message.objects.filter(pk=newest.pk).delete()
        _record_edit(session, removed_messages=1, removed_rounds=0)
    if key is not None:
        MessagePop.objects.create(
            session=session,
            tenant_id=session.tenant_id,
            user_id=session.user_id,
            key=key,
            message=popped,
            message_created_at=None if newest is None else newest.created_at,
        )
    return popped


def _pop_read(session: Session, key: str | None) -> tuple[Message | None, dict[str, Any]]:
    """The session's newest message (None for an empty history) and what decides its pop, in one
    written-out statement: the answer kept under ``key`` (``answered``, and ``answer``) and the
    oldest legal hold covering the session (``hold_reference``). The ORM's build of this query,
    with its subqueries, cost about four times running it: it was most of a pop's time."""
    # Raw: benchmarks/frameworks.py SDK pop_item per-call target; the ORM's build cost more than the run
    database = connections[DEFAULT_DB_ALIAS]
    with database.cursor() as cursor:
        cursor.execute(
            _POP_READ_SQL,
            {"tenant": session.tenant_id, "user_id": session.user_id, "session_pk": session.pk, "key": key},
        )
        return _pop_found(database, cursor.fetchone())


def _pop_found(database: Any, row: tuple[Any, ...]) -> tuple[Message | None, dict[str, Any]]:
    """``_POP_READ_SQL``'s row: the newest message and what decides the pop."""
    *message, hold_reference, answered, answer = row
    newest = None if message[0] is None else row_as_model(Message, database, message)
    convert = column_converter(database, MessagePop._meta.get_field("message"))
    if answer is not None and convert is not None:
        answer = convert(answer)
    return newest, {"hold_reference": hold_reference, "answered": bool(answered), "answer": answer}


_MESSAGES, _POPS = Message._meta.db_table, MessagePop._meta.db_table
_POP_READ_SQL = (
    f"SELECT {model_columns(Message, 'm')}, ({COVERING_HOLD_SQL}), p.id IS NOT NULL, p.message "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
    f'FROM (SELECT 1) one LEFT JOIN "{_MESSAGES}" m ON m.id = '
    f'(SELECT n.id FROM "{_MESSAGES}" n WHERE n.session_id = %(session_pk)s ORDER BY n.seq DESC LIMIT 1) '
    f'LEFT JOIN "{_POPS}" p ON p.session_id = %(session_pk)s AND p.key = %(key)s'
)


_SESSION_IDENTITY = "tenant_id = %(tenant)s AND user_id = %(user_id)s AND session_id = %(session_id)s AND app_name = ''"
# The REST API's session found by its lock (as ``session_touch`` takes it, with the hold lock),
# then the pop's read of it as a statement of its own: one round trip (``execute_all``), two snapshots.
_POP_LOCK_SQL = activity_update_sql(
    where=_SESSION_IDENTITY,
    returning=f"{model_columns(Session, Session._meta.db_table)}, pg_advisory_xact_lock_shared(%(holds)s)",
    writable=False,
    time="%(now)s",
)
_POP_READ_LOCKED_SQL = _POP_READ_SQL.replace(
    "%(session_pk)s",
    f'(SELECT id FROM "{Session._meta.db_table}" WHERE {_SESSION_IDENTITY})',  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
)


def _pop_postgresql(session: Session, newest: Message, *, key: str | None, popped: dict[str, Any] | None) -> None:
    """The pop's edit in one statement: delete the message, keep the counters true, drop the usage
    of the turns it removed (as ``_record_edit``: every turn past the user messages left, every
    turn once none is left) and keep the answer under ``key``. The statement's snapshot still
    holds the popped message, which the usage rule leaves out by its seq."""
    # Raw: benchmarks/frameworks.py SDK pop_item per-call target: the pop's edit in one statement
    quote = connection.ops.quote_name
    messages, usage = quote(Message._meta.db_table), quote(RunUsage._meta.db_table)
    params: dict[str, Any] = {
        "session": session.pk,
        "message": newest.pk,
        "seq": newest.seq,
        "was_user": int(newest.role == "user"),
    }
    kept = "SELECT 1"
    if key is not None:
        kept = (
            f"INSERT INTO {quote(MessagePop._meta.db_table)} "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
            "(session_id, tenant_id, user_id, created_at, key, message, message_created_at) "
            "VALUES (%(session)s, %(tenant)s, %(user_id)s, %(now)s, %(key)s, %(answer)s::jsonb, %(created_at)s)"
        )
        params.update(
            tenant=session.tenant_id,
            user_id=session.user_id,
            now=timezone.now(),
            key=key,
            answer=json.dumps(popped),
            created_at=newest.created_at,
        )
    sql = (
        f"WITH removed AS (DELETE FROM {messages} WHERE id = %(message)s), "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"counted AS (UPDATE {quote(Session._meta.db_table)} SET message_count = message_count - 1, "
        "history_generation = history_generation + 1 WHERE id = %(session)s), "
        f"turns_gone AS (DELETE FROM {usage} WHERE session_id = %(session)s AND ("
        f"NOT EXISTS (SELECT 1 FROM {messages} WHERE session_id = %(session)s AND seq < %(seq)s) "
        f"OR turn > (SELECT COUNT(*) FROM {messages} WHERE session_id = %(session)s AND role = 'user') "
        "- %(was_user)s)) "
        f"{kept}"
    )
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)


@transaction.atomic
def message_rewind(
    *, session: Session, after_seq: int, after_round: int | None = None, expected_last_seq: int | None = None
) -> HistoryEdit:
    """Remove every message after ``after_seq`` and, with ``after_round``, every round after it."""
    after_seq = _clean_seq(after_seq, field="after_seq")
    if after_round is not None:
        after_round = clean_round_id(after_round, field="after_round")
    if expected_last_seq is not None:
        expected_last_seq = _clean_seq(expected_last_seq, field="expected_last_seq")
    _lock_live(session)
    session_hold_check(session, what="this session's messages and rounds")
    if expected_last_seq is not None:
        _check_last_seen(_newest_seq(session), expected_last_seq)
    removed_messages = Message.objects.filter(session=session, seq__gt=after_seq).delete()[0]
    removed_rounds = 0
    if after_round is not None:
        removed_rounds = Round.objects.filter(session=session, round_id__gt=after_round).delete()[0]
    _record_edit(session, removed_messages=removed_messages, removed_rounds=removed_rounds)
    session.refresh_from_db()
    return HistoryEdit(session=session, removed_messages=removed_messages, removed_rounds=removed_rounds)


@transaction.atomic
def message_clear(*, session: Session, expected_last_seq: int | None = None) -> HistoryEdit:
    """Remove every message, keeping the session (its rounds, checkpoints and counters stay); what
    was made from its conversation goes as if it were deleted (``subject_data.derived_forget``:
    the memories made only from it)."""
    edit = message_rewind(session=session, after_seq=0, expected_last_seq=expected_last_seq)
    subject_data.derived_forget([session.pk])
    return edit


def _copy_rows(model, *, source: Session, target: Session, key: str, up_to: int) -> int:
    """``INSERT ... SELECT`` every row of ``source`` with ``key <= up_to`` into ``target``: one
    statement whatever the number of rows."""
    # Raw: benchmarks/history_edits.py fork of 100,000 ≤ 2 s: one INSERT … SELECT, no row loaded
    columns = [f.column for f in model._meta.concrete_fields if f.name not in ("id", "session")]
    quote = connection.ops.quote_name
    names = ", ".join(quote(c) for c in columns)
    table = quote(model._meta.db_table)
    sql = (
        f"INSERT INTO {table} (session_id, {names}) SELECT %s, {names} FROM {table} "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"WHERE session_id = %s AND {quote(key)} <= %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [target.pk, source.pk, up_to])
        return cursor.rowcount


@transaction.atomic
def session_fork(
    *,
    session: Session,
    new_session_id: str | None = None,
    up_to_seq: int | None = None,
    up_to_round: int | None = None,
    expected_last_seq: int | None = None,
    metadata: dict[str, Any] | None = None,
) -> Session:
    """Copy the session's messages up to ``up_to_seq`` and rounds up to ``up_to_round`` (default:
    all) into a new session of the same user that records its parent; it keeps the parent's agent,
    workspace and metadata (``metadata`` replaces the latter). A fixed number of statements
    whatever the history's size; a blank id becomes a new UUID, an existing one is a conflict."""
    new_id = new_session_id_clean(new_session_id, field="new_session_id")
    if up_to_seq is not None:
        up_to_seq = _clean_seq(up_to_seq, field="up_to_seq")
    if up_to_round is not None:
        up_to_round = clean_round_id(up_to_round, field="up_to_round")
    if expected_last_seq is not None:
        expected_last_seq = _clean_seq(expected_last_seq, field="expected_last_seq")
    if metadata is not None:
        metadata = clean_json(metadata, field="metadata", require_object=True)
    subject_write_check(tenant=session.tenant, user_id=session.user_id, category=PROCESS_STATE)
    source = lock_session(session)  # no append or edit lands halfway through the copy
    if expected_last_seq is not None:
        _check_last_seen(_newest_seq(source), expected_last_seq)
    seq_limit = source.last_seq if up_to_seq is None else min(up_to_seq, source.last_seq)
    round_limit = source.last_round_id if up_to_round is None else min(up_to_round, source.last_round_id)
    now = timezone.now()
    fork = Session(
        tenant_id=source.tenant_id,
        user_id=source.user_id,
        session_id=new_id,
        app_name=source.app_name,
        framework=source.framework,
        agent_id=source.agent_id,
        workspace_id=source.workspace_id,
        metadata=source.metadata if metadata is None else metadata,
        created_at=now,
        updated_at=now,
        last_seq=seq_limit,
        parent=source,
        forked_from_session_id=source.session_id,
        forked_from_seq=seq_limit,
        forked_from_round=round_limit,
    )
    try:
        with transaction.atomic():
            fork.save(force_insert=True)
    except IntegrityError:
        raise SessionAlreadyExists(f"Session {new_id!r} already exists for this user.") from None
    fork.message_count = _copy_rows(Message, source=source, target=fork, key="seq", up_to=seq_limit)
    rounds = _copy_rows(Round, source=source, target=fork, key="round_id", up_to=round_limit)
    if rounds:
        fork.last_round_id = Round.objects.filter(session=fork).aggregate(top=Max("round_id"))["top"]
    Session.objects.filter(pk=fork.pk).update(message_count=fork.message_count, last_round_id=fork.last_round_id)
    return fork
