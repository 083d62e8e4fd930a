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

from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.models import F, Max, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from agentstate import subject_data
from agentstate.exceptions import Held, InvalidInput, NotFound, PreconditionFailed, SessionAlreadyExists, SessionEnded
from agentstate.holds.selectors import COVERING_HOLD_SQL
from agentstate.holds.services import holds_lock_key
from agentstate.statements import execute_all
from agentstate.subjects import PROCESS_STATE, subject_write_check
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_json, clean_round_id
from sessions_app.models import Message, MessagePop, Round, RunUsage, Session
from sessions_app.selectors.export import MESSAGE_FIELDS, message_as_dict
from sessions_app.selectors.rows import column_converter, model_columns, row_as_model
from sessions_app.selectors.sessions import session_get
from sessions_app.services.live import (
    activity_time,
    activity_update_sql,
    lock_session,
    session_hold_check,
    session_touch,
)
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


def message_pop(
    *, session: Session, idempotency_key: str | None = None, expected_last_seq: int | None = None
) -> dict[str, Any] | None:
    """Remove and return the newest message (``message_as_dict``), or None for an empty history.

    Pops of one session are serialised by its row lock, so concurrent pops each get a different
    message or None. With ``idempotency_key``, the answer is kept: a retry with the same key
    returns it again and pops nothing. A refused pop (ended, held, a stale ``expected_last_seq``)
    changes nothing. One round trip on PostgreSQL at any history size (``_pop_in_one_round_trip``)."""
    key, expected_last_seq = _pop_arguments(idempotency_key, expected_last_seq)
    if connection.vendor == "postgresql":
        found = {"session_pk": session.pk, "tenant": session.tenant_id, "user_id": session.user_id}
        return _pop_in_one_round_trip(_POP_BY_PK, found, key=key, expected_last_seq=expected_last_seq)
    return _pop_locked(session, key=key, expected_last_seq=expected_last_seq)


def message_pop_from(
    *,
    tenant: Tenant,
    user_id: str,
    session_id: str,
    idempotency_key: str | None = None,
    expected_last_seq: int | None = None,
) -> dict[str, Any] | None:
    """``message_pop`` of the REST API's session ``session_id`` of ``user_id`` (on PostgreSQL found
    by the pop's own statements, no lookup of its own)."""
    key, expected_last_seq = _pop_arguments(idempotency_key, expected_last_seq)  # first, on every database
    if connection.vendor == "postgresql":
        found = {"tenant": tenant.pk, "user_id": user_id, "session_id": session_id}
        return _pop_in_one_round_trip(_POP_BY_IDENTITY, found, key=key, expected_last_seq=expected_last_seq)
    session = session_get(tenant=tenant, user_id=user_id, session_id=session_id)
    return _pop_locked(session, key=key, expected_last_seq=expected_last_seq)


def _pop_arguments(idempotency_key: str | None, expected_last_seq: int | None) -> tuple[str | None, int | None]:
    key = None if idempotency_key is None else clean_identifier(idempotency_key, field="idempotency_key")
    if expected_last_seq is not None:
        expected_last_seq = _clean_seq(expected_last_seq, field="expected_last_seq")
    return key, expected_last_seq


def _pop_refused(*, ended: bool, hold_reference: str | None, newest: int, expected_last_seq: int | None) -> None:
    """The pop's rules, in the order both databases apply them (after a kept answer, which wins)."""
    if ended:
        raise SessionEnded(ENDED)
    if hold_reference is not None:
        raise Held.of(hold_reference, what="this session's messages")
    _check_last_seen(newest, expected_last_seq)


def _pop_in_one_round_trip(
    statements: tuple[str, str], found: dict[str, Any], *, key: str | None, expected_last_seq: int | None
) -> dict[str, Any] | None:
    """PostgreSQL's pop: two statements in one round trip (``execute_all``), one transaction (the
    caller's, or in autocommit the round trip's own, which the hold lock lasts until). The first
    takes the session's row lock and the tenant's hold lock (shared); the second, whose snapshot
    begins after both, decides (a kept answer, an ended session, a hold, the newest seq) and, when
    the pop goes through, deletes the newest message, records the activity and the edit on the
    session's row (``activity_update_sql``), drops the usage of the turn it removed and keeps the
    answer. It returns what decided, so a refusal has changed nothing. It was four round trips
    (BEGIN, the locks with the read, the edit, COMMIT)."""
    # Raw: benchmarks/frameworks.py SDK pop_item per-call target: a pop in one round trip
    database = connections[DEFAULT_DB_ALIAS]
    holds_key = holds_lock_key(found["tenant"])
    params = {**found, "holds": holds_key, "key": key, "expected": expected_last_seq, "now": activity_time()}
    _, decided = execute_all((statements[0], params), (statements[1], params))
    if not decided:
        raise NotFound("Session not found.")
    ended, hold_reference, newest, answered, kept, popped = decided[0]
    if answered:
        return _answer_read(database, kept)
    _pop_refused(ended=ended, hold_reference=hold_reference, newest=newest, expected_last_seq=expected_last_seq)
    return _answer_read(database, popped)


def _answer_read(database: Any, answer: Any) -> Any:
    """A pop's answer as the database returned it (``MessagePop.message``'s column), as Python data."""
    convert = column_converter(database, MessagePop._meta.get_field("message"))
    return convert(answer) if convert is not None and answer is not None else answer


@transaction.atomic
def _pop_locked(session: Session, *, key: str | None, expected_last_seq: int | None) -> dict[str, Any] | None:
    """The pop on SQLite (its IMMEDIATE transaction serialises every writer): the row lock and the
    activity, the read of what decides, the edit through the ORM."""
    locked = session_touch(session, holds_lock_shared=True)
    newest, found = _pop_read(session, key)
    if key is not None and found["answered"]:
        return found["answer"]
    _pop_refused(
        ended=locked.ended_at is not None,
        hold_reference=found["hold_reference"],
        newest=0 if newest is None else newest.seq,
        expected_last_seq=expected_last_seq,
    )
    popped = None if newest is None else message_as_dict(newest)
    if newest is not None:
        Message.objects.filter(pk=newest.pk).delete()
        _record_edit(locked, removed_messages=1, removed_rounds=0)
    if key is not None:
        MessagePop.objects.create(
            session=locked,
            tenant_id=locked.tenant_id,
            user_id=locked.user_id,
            key=key,
            message=popped,
            message_created_at=None if newest is None else newest.created_at,
        )
    return popped


def _pop_read(session: Session, key: str | None) -> tuple[Message | None, dict[str, Any]]:
    """The session's newest message (None for an empty history) and what decides its pop, in one
    written-out statement: the answer kept under ``key`` (``answered``, and ``answer``) and the
    oldest legal hold covering the session (``hold_reference``). The ORM's build of this query,
    with its subqueries, cost about four times running it."""
    # Raw: SQLite's pop read; the ORM's build of it cost more than its run (benchmarks/frameworks.py)
    database = connections[DEFAULT_DB_ALIAS]
    with database.cursor() as cursor:
        cursor.execute(
            _POP_READ_SQL,
            {"tenant": session.tenant_id, "user_id": session.user_id, "session_pk": session.pk, "key": key},
        )
        *message, hold_reference, answered, answer = cursor.fetchone()
    newest = None if message[0] is None else row_as_model(Message, database, message)
    answer = _answer_read(database, answer)
    return newest, {"hold_reference": hold_reference, "answered": bool(answered), "answer": answer}


_MESSAGES, _POPS = Message._meta.db_table, MessagePop._meta.db_table
_POP_READ_SQL = (
    f"SELECT {model_columns(Message, 'm')}, ({COVERING_HOLD_SQL}), p.id IS NOT NULL, p.message "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
    f'FROM (SELECT 1) one LEFT JOIN "{_MESSAGES}" m ON m.id = '
    f'(SELECT n.id FROM "{_MESSAGES}" n WHERE n.session_id = %(session_pk)s ORDER BY n.seq DESC LIMIT 1) '
    f'LEFT JOIN "{_POPS}" p ON p.session_id = %(session_pk)s AND p.key = %(key)s'
)


def _pop_statements(where: str) -> tuple[str, str]:
    """The two statements of ``_pop_in_one_round_trip`` for the session ``where`` finds. Named
    parameters: those of ``where``, ``tenant`` and ``user_id`` (the hold check), ``holds`` (the hold
    lock's key), ``key``, ``expected`` (expected_last_seq or None) and ``now`` (the activity time)."""
    sessions, usage = f'"{Session._meta.db_table}"', f'"{RunUsage._meta.db_table}"'
    messages, pops = f'"{_MESSAGES}"', f'"{_POPS}"'
    columns = {field.name: field.column for field in Message._meta.concrete_fields}
    answer = ", ".join(f"'{name}', m.\"{columns[name]}\"" for name in MESSAGE_FIELDS)
    # It begins with WITH, the first word of a write: the round trip commits (agentstate.postgresql
    # bounds a commit's wait for a standby by the statement's first word).
    lock = (
        f"WITH s AS (SELECT id FROM {sessions} WHERE {where} FOR NO KEY UPDATE) "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        "SELECT pg_advisory_xact_lock_shared(%(holds)s) FROM s"
    )
    touched = activity_update_sql(
        where="id = (SELECT id FROM verdict WHERE answered OR passes)",
        sets="message_count = message_count - (SELECT COUNT(*) FROM popped), "
        "history_generation = history_generation + (SELECT COUNT(*) FROM popped)",
        time="%(now)s",
    )
    pop = (
        f"WITH s AS (SELECT id, tenant_id, user_id, ended_at IS NOT NULL AND NOT ended_by_retention AS ended "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"FROM {sessions} WHERE {where}), "
        f"newest AS (SELECT m.id, m.seq, m.role, m.created_at, JSONB_BUILD_OBJECT({answer}) AS answer "
        f"FROM {messages} m WHERE m.session_id = (SELECT id FROM s) ORDER BY m.seq DESC LIMIT 1), "
        "checked AS (SELECT s.*, kept.id IS NOT NULL AS answered, kept.message AS kept, "
        f"({COVERING_HOLD_SQL.replace('%(session_pk)s', 's.id')}) AS hold_reference, "
        "COALESCE((SELECT seq FROM newest), 0) AS newest_seq "
        f"FROM s LEFT JOIN {pops} kept ON kept.session_id = s.id AND kept.key = %(key)s::text), "
        "verdict AS (SELECT *, NOT answered AND NOT ended AND hold_reference IS NULL "
        "AND (%(expected)s::bigint IS NULL OR newest_seq = %(expected)s::bigint) AS passes FROM checked), "
        f"removed AS (DELETE FROM {messages} WHERE id = (SELECT id FROM newest) "
        "AND (SELECT passes FROM verdict) RETURNING id), "
        "popped AS (SELECT newest.* FROM newest JOIN removed USING (id)), "
        f"touched AS ({touched}), "
        # The usage of the turns the pop removed (as run_usage_drop_removed_turns): every turn once
        # no message is left, else every turn past the user messages left. This snapshot still
        # holds the popped message, which is left out by its seq and its role.
        f"turns_gone AS (DELETE FROM {usage} u USING popped WHERE u.session_id = (SELECT id FROM s) AND ("
        f"NOT EXISTS (SELECT 1 FROM {messages} WHERE session_id = u.session_id AND seq < popped.seq) "
        f"OR u.turn > (SELECT COUNT(*) FROM {messages} WHERE session_id = u.session_id AND role = 'user') "
        "- (popped.role = 'user')::int)), "
        f"kept_answer AS (INSERT INTO {pops} (session_id, tenant_id, user_id, created_at, key, message, "
        "message_created_at) SELECT verdict.id, verdict.tenant_id, verdict.user_id, %(now)s, %(key)s::text, "
        "popped.answer, popped.created_at FROM verdict LEFT JOIN popped ON TRUE "
        "WHERE verdict.passes AND %(key)s::text IS NOT NULL) "
        "SELECT ended, hold_reference, newest_seq, answered, kept, (SELECT answer FROM popped) FROM verdict"
    )
    return lock, pop


_POP_BY_IDENTITY = _pop_statements(
    "tenant_id = %(tenant)s AND user_id = %(user_id)s AND session_id = %(session_id)s AND app_name = ''"
)
_POP_BY_PK = _pop_statements("id = %(session_pk)s")


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
