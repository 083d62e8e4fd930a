"""Writes of the LangGraph checkpointer: threads, checkpoints, pending writes, and the thread-wide
operations (delete, copy, prune, delete for runs). Each call is one transaction."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import ormsgpack
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, Field, OuterRef, QuerySet, Subquery
from django.utils import timezone

from agentstate.exceptions import Conflict, DomainError, InvalidInput
from agentstate.subjects import PROCESS_STATE, subject_write_check
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_json
from backends.langgraph.process.models import LangGraphBlob, LangGraphCheckpoint, LangGraphThread, LangGraphWrite
from sessions_app.models import Session, SessionOwned
from sessions_app.services.live import activity_update_sql, raise_not_live, sessions_hold_check
from sessions_app.services.retention import rows_past_latest
from sessions_app.services.sessions import session_delete

FRAMEWORK = "langgraph"
APP_NAME = "langgraph"  # keeps threads out of the REST API's own sessions (app_name "")
# Index entries have a size limit (about 2.7 kB in PostgreSQL): namespaces and ids are bounded in
# UTF-8 bytes so the unique keys always fit; LangGraph's own are far shorter (uuids, "node:uuid|...").
MAX_NS_BYTES = 2000
MAX_ID_BYTES = 255
MAX_TYPE_LENGTH = 32
PRUNE_STRATEGIES = ("keep_latest", "delete")


class ThreadOwnedByAnotherUser(Conflict):
    code = "thread_owned_by_another_user"


class SaverUpgradeRequired(InvalidInput):
    """A read asking for a whole checkpoint (as savers from before channel values were stored by
    version do) that the server cannot put together: its values are not all msgpack."""

    code = "saver_upgrade_required"

    def __init__(self) -> None:
        super().__init__(
            "This checkpoint's channel values are stored apart in a format the server cannot join into it: "
            "upgrade agentstate's AgentStateSaver (the client package) to the server's version, whose reads ask "
            "for them apart (channel_values=separate)."
        )


_MSGPACK_OPTIONS = ormsgpack.OPT_NON_STR_KEYS


def _kept_ext(code: int, data: bytes) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, data)


def checkpoint_whole(value_type: str, value: bytes | memoryview, blobs: Sequence[Any]) -> bytes:
    """The checkpoint as a saver from before the change stored and reads it: its channel values
    back inside it. LangGraph's msgpack is put together without decoding a value (extension
    values are kept byte for byte); any other format cannot be, and the caller must upgrade."""
    if not blobs:
        return bytes(value)
    if value_type != "msgpack" or any(b.value_type != "msgpack" for b in blobs):
        raise SaverUpgradeRequired()
    checkpoint = ormsgpack.unpackb(bytes(value), ext_hook=_kept_ext, option=_MSGPACK_OPTIONS)
    values = checkpoint.setdefault("channel_values", {})
    for blob in blobs:
        values[blob.channel] = ormsgpack.unpackb(bytes(blob.value), ext_hook=_kept_ext, option=_MSGPACK_OPTIONS)
    return ormsgpack.packb(checkpoint, option=_MSGPACK_OPTIONS)


# --- Identifiers and values --------------------------------------------------------------------


def clean_text(value: Any, *, field: str, max_bytes: int | None = None, allow_empty: bool = True) -> str:
    """A LangGraph identifier as mapped by the client: any string a database can hold."""
    if not isinstance(value, str):
        raise InvalidInput.for_field(field, "must be a string.")
    if not value and not allow_empty:
        raise InvalidInput.for_field(field, "must not be empty.")
    if "\x00" in value:
        raise InvalidInput.for_field(field, "must not contain NUL characters (the client maps them).")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput.for_field(field, "must be valid Unicode (no lone surrogates).") from None
    if max_bytes is not None and size > max_bytes:
        raise InvalidInput.for_field(field, f"must be at most {max_bytes} bytes in UTF-8.")
    return value


@dataclass(frozen=True)
class TypedValue:
    """A value as LangGraph's serializer wrote it (staff's JSON view is rendered from it when read)."""

    type: str
    data: bytes


def clean_typed_value(value: Any, *, field: str) -> TypedValue:
    """``{"type", "data"}``, the data binary in msgpack, base64 in JSON: the bytes are the round
    trip. A ``rendered`` view that earlier savers sent is ignored: the server renders staff's view
    from the bytes (``staff_view``)."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise InvalidInput.for_field(field, 'must be {"type": str, "data": bytes, or base64 str in JSON}.')
    type_ = clean_text(value["type"], field=field, allow_empty=False)
    if len(type_) > MAX_TYPE_LENGTH:
        raise InvalidInput.for_field(field, f"type must be at most {MAX_TYPE_LENGTH} characters.")
    data = value.get("data")
    if isinstance(data, bytes):
        return TypedValue(type=type_, data=data)
    if not isinstance(data, str):
        raise InvalidInput.for_field(field, 'must be {"type": str, "data": bytes, or base64 str in JSON}.')
    try:
        return TypedValue(type=type_, data=base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        raise InvalidInput.for_field(field, "data must be base64.") from None


def version_text(version: Any) -> str:
    """A channel version as the blobs' key holds it: a string as it is, a number as Python writes
    it (as ``PostgresSaver`` does; the reads join on the same text of ``channel_versions``)."""
    if isinstance(version, str):
        return version
    if isinstance(version, (int, float)) and not isinstance(version, bool):
        return str(version)
    raise InvalidInput.for_field("channel_versions", "each version must be a string or a number.")


def thread_key(thread_id: str) -> str:
    return hashlib.sha256(thread_id.encode("utf-8")).hexdigest()


def _session_id_for(thread_id: str) -> str:
    """The thread id itself when it is a valid session id, else ``~`` and its key (the full id
    stays on the thread row). Ids starting with ``~`` are keyed too, so the two never collide."""
    try:
        if not thread_id.startswith("~"):
            return clean_identifier(thread_id, field="thread_id")
    except InvalidInput:
        pass
    return "~" + thread_key(thread_id)


# --- Threads -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadRef:
    """A thread being written: its session's pk and its owner."""

    pk: int
    user_id: str


@functools.cache  # two shapes per database
def _thread_lock_sql(vendor: str, *, user_check: bool, returning: str = "id, user_id") -> str:
    """The activity ``UPDATE`` (``activity_update_sql``) of the tenant's live thread on ``vendor``'s
    database, ``RETURNING returning`` (its two parameters after the time: tenant and key; a third,
    the user id or NULL, when ``user_check``)."""
    owner = " AND user_id = COALESCE(%s, user_id)" if user_check else ""
    return activity_update_sql(
        where=(
            f"id = (SELECT session_id FROM {connection.ops.quote_name(LangGraphThread._meta.db_table)} "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
            f"WHERE tenant_id = %s AND thread_key = %s){owner}"
        ),
        returning=returning,
    )


def _now() -> Any:
    return connection.ops.adapt_datetimefield_value(timezone.now())


def _thread_lock(*, tenant: Tenant, key: str) -> ThreadRef | None:
    """Find the thread, take its session's row lock and record the write as activity, in one
    statement: ``updated_at`` moves to now and a thread retention ended is reopened, and the write
    is ordered with a delete, an erasure or a retention sweep of the thread (one that won leaves
    nothing to find)."""
    # Raw: benchmarks/frameworks.py LangGraph step target; find, lock and touch the thread in one statement
    with connection.cursor() as cursor:
        cursor.execute(_thread_lock_sql(connection.vendor, user_check=False), [_now(), tenant.pk, key])
        row = cursor.fetchone()
    return None if row is None else ThreadRef(*row)


def thread_for_write(*, tenant: Tenant, thread_id: str, user_id: str | None, default_user_id: str) -> ThreadRef:
    """Inside a transaction: the tenant's thread, locked; created by its first write for
    ``user_id`` (the graph's ``configurable["user_id"]``) or else the saver's ``default_user_id``.
    A write naming another user than the owner is refused (409); one naming none is the owner's."""
    thread_id = clean_text(thread_id, field="thread_id", allow_empty=False)
    default_user_id = clean_identifier(default_user_id, field="default_user_id")
    if user_id is not None:
        user_id = clean_identifier(user_id, field="user_id")
    key = thread_key(thread_id)
    thread = _thread_lock(tenant=tenant, key=key)
    if thread is None:
        owner = user_id or default_user_id
        subject_write_check(tenant=tenant, user_id=owner, category=PROCESS_STATE)
        try:
            with transaction.atomic():
                session = Session.objects.create(
                    tenant=tenant,
                    user_id=owner,
                    session_id=_session_id_for(thread_id),
                    app_name=APP_NAME,
                    framework=FRAMEWORK,
                )
                LangGraphThread.objects.create(
                    session=session, tenant=tenant, user_id=owner, thread_id=thread_id, thread_key=key
                )
            thread = ThreadRef(session.pk, owner)
        except IntegrityError:  # a concurrent first write won, or the thread is there and not live
            thread = _thread_lock(tenant=tenant, key=key)
            if thread is None:
                found = LangGraphThread.objects.filter(tenant=tenant, thread_key=key).first()
                if found is None:
                    raise
                raise_not_live(found.session)
    if user_id is not None and thread.user_id != user_id:
        raise ThreadOwnedByAnotherUser("This thread belongs to another user; writes must name its owner.")
    return thread


def _metadata_columns(metadata: dict[str, Any]) -> dict[str, Any]:
    run_id, step, source = metadata.get("run_id"), metadata.get("step"), metadata.get("source")
    return {
        "run_id": run_id if isinstance(run_id, str) and len(run_id.encode("utf-8")) <= MAX_ID_BYTES else None,
        "step": step if isinstance(step, int) and not isinstance(step, bool) and abs(step) < 2**63 else None,
        "source": source if isinstance(source, str) and len(source) <= 32 else "",
    }


def _clean_key(checkpoint_ns: Any, checkpoint_id: Any) -> tuple[str, str]:
    """A checkpoint's namespace and id within the index's bounds."""
    return (
        clean_text(checkpoint_ns, field="checkpoint_ns", max_bytes=MAX_NS_BYTES),
        clean_text(checkpoint_id, field="checkpoint_id", max_bytes=MAX_ID_BYTES, allow_empty=False),
    )


def _column(model: type[SessionOwned], name: str) -> str:
    """The quoted column of a concrete field (every field named here has one)."""
    return connection.ops.quote_name(cast(str, cast(Field, model._meta.get_field(name)).column))


@dataclass(frozen=True)
class _Insert:
    """Rows of one of a thread's tables, as the two pieces of a statement that reads the thread's
    session from a CTE ``s(id, user_id, tenant_id, updated_at)``: the CTE of their values (named
    ``name``), and the ``INSERT ... SELECT ... FROM s, <name>`` that stores them, created at the
    session's activity time (the statement's one time)."""

    values: str
    values_params: list[Any]
    insert: str


def _insert(
    model: type[SessionOwned],
    fields: tuple[str, ...],
    rows: Sequence[Sequence[Any]],
    *,
    conflict: tuple[str, ...],
    update: tuple[str, ...] = (),
    name: str = "v",
) -> _Insert:
    """``rows`` (values of ``fields``) for ``model``; a row whose ``conflict`` key is stored already
    is kept as it is, or takes the ``update`` columns (a retried put replaces, as LangGraph's savers
    do). ``name``: the CTE of the values, one per table of a statement."""
    prepare = _preparers(model, fields)
    values, insert = _insert_sql(model, fields, len(rows), conflict, update, connection.vendor, name)
    return _Insert(
        values=values,
        values_params=[p(value) for r in rows for p, value in zip(prepare, r, strict=True)],
        insert=insert,
    )


# Columns whose values the checks above leave as the database takes them (str, int or None).
_TAKEN_AS_THEY_ARE = frozenset({"TextField", "CharField", "IntegerField", "BigIntegerField"})


def _as_it_is(value: Any) -> Any:
    return value


@functools.cache  # a few tables' field lists
def _preparers(model: type[SessionOwned], fields: tuple[str, ...]) -> tuple[Callable[[Any], Any], ...]:
    """How each field's value is bound: as it is for text and integers, else as Django prepares
    it for the connection (JSON, bytes)."""
    preparers = []
    for name in fields:
        field = cast(Field, model._meta.get_field(name))
        if field.get_internal_type() in _TAKEN_AS_THEY_ARE:
            preparers.append(_as_it_is)
        else:
            preparers.append(functools.partial(_prepared, field))
    return tuple(preparers)


def _prepared(field: Field, value: Any) -> Any:
    return field.get_db_prep_save(value, connection)


@functools.lru_cache(maxsize=256)  # shapes by row count: a few per graph
def _insert_sql(
    model: type[SessionOwned],
    fields: tuple[str, ...],
    rows: int,
    conflict: tuple[str, ...],
    update: tuple[str, ...],
    vendor: str,
    name: str,
) -> tuple[str, str]:
    """The SQL of ``_insert``, worked out once per shape (a step's writes repeat a few shapes).
    ``WHERE true`` tells SQLite that ``ON CONFLICT`` is not a join's."""
    columns = [_column(model, name) for name in fields]
    # VALUES has no column types of its own: PostgreSQL is told them, SQLite needs none.
    casts = [
        f"::{cast(Field, model._meta.get_field(name)).db_type(connection)}" if vendor == "postgresql" else ""
        for name in fields
    ]
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    selected = ", ".join(f"{name}.{column}{cast}" for column, cast in zip(columns, casts, strict=True))
    keys = ", ".join(_column(model, name) for name in conflict)
    updated = [_column(model, name) for name in update]
    action = "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in updated) if updated else "DO NOTHING"
    table = connection.ops.quote_name(model._meta.db_table)
    return (
        f"{name}({', '.join(columns)}) AS (VALUES {', '.join([row] * rows)})",
        f"INSERT INTO {table} (session_id, tenant_id, user_id, created_at, {', '.join(columns)}) "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"SELECT s.id, s.tenant_id, s.user_id, s.updated_at, {selected} FROM s, {name} WHERE true "
        f"ON CONFLICT ({keys}) {action}",
    )


@dataclass(frozen=True)
class _Rows:
    """Rows of one of a thread's tables and what a stored key does (``_insert``'s arguments)."""

    model: type[SessionOwned]
    fields: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    conflict: tuple[str, ...]
    update: tuple[str, ...] = ()

    def keys(self) -> set[tuple[Any, ...]]:
        """The unique key of each row (its session aside): the same row twice in one statement is
        an error in PostgreSQL's upsert."""
        at = [self.fields.index(name) for name in self.conflict if name != "session"]
        return {(self.model, *(row[i] for i in at)) for row in self.rows}

    def insert(self, name: str) -> _Insert:
        return _insert(self.model, self.fields, self.rows, conflict=self.conflict, update=self.update, name=name)


@dataclass(frozen=True)
class ThreadWrite:
    """A put checked and ready to store in its thread (``thread_writes_store``)."""

    thread_id: str
    user_id: str | None
    default_user_id: str
    rows: tuple[_Rows, ...]


def _thread_write_of(*, thread_id: Any, user_id: Any, default_user_id: Any, rows: Sequence[_Rows]) -> ThreadWrite:
    return ThreadWrite(
        thread_id=clean_text(thread_id, field="thread_id", allow_empty=False),
        user_id=None if user_id is None else clean_identifier(user_id, field="user_id"),
        default_user_id=clean_identifier(default_user_id, field="default_user_id"),
        rows=tuple(rows),
    )


def _fast_write(*, tenant: Tenant, writes: Sequence[ThreadWrite]) -> bool:
    """On PostgreSQL, writes of one thread by one user as one statement, atomic by itself, when the
    thread exists and they name no other user (every write after a thread's first): it records the
    write as the session's activity and stores every row, with no BEGIN and COMMIT round trips, its
    values bound as parameters (``bound_cursor``), not spliced into its text. False when it stored
    nothing (no such thread of that user) or the database is not PostgreSQL."""
    # Raw: benchmarks/frameworks.py LangGraph step target; a put or a batch of one thread in one statement
    if connection.vendor != "postgresql":
        return False
    write, now = writes[0], _now()
    inserts = [rows.insert(f"v{n}") for n, rows in enumerate(_merged(r for w in writes for r in w.rows))]
    lock = _thread_lock_sql(connection.vendor, user_check=True, returning="id, user_id, tenant_id, updated_at")
    ctes = [
        f"s AS ({lock})",
        *(i.values for i in inserts),
        *(f"w{n} AS ({i.insert})" for n, i in enumerate(inserts)),
    ]
    params = [now, tenant.pk, thread_key(write.thread_id), write.user_id]
    params += [p for i in inserts for p in i.values_params]
    with connection.bound_cursor(prepared=True) as cursor:  # type: ignore[attr-defined]  # agentstate.postgresql's
        cursor.execute(f"WITH {', '.join(ctes)} SELECT count(*) FROM s", params)  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        (found,) = cursor.fetchone()
    return bool(found)


def _merged(rows: Iterable[_Rows]) -> list[_Rows]:
    """``rows`` with those of one table that do the same on a stored key as one: an ``INSERT`` each
    in the statement (a step's batch stores its tasks' writes in one). Their keys are distinct
    (``_same_thread_runs``), so one ``INSERT`` stores what several would."""
    merged: dict[tuple[Any, ...], _Rows] = {}
    for each in rows:
        shape = (each.model, each.fields, each.conflict, each.update)
        before = merged.get(shape)
        merged[shape] = each if before is None else dataclasses.replace(before, rows=[*before.rows, *each.rows])
    return list(merged.values())


def thread_write(*, tenant: Tenant, write: ThreadWrite) -> None:
    """Store a write's rows in its thread as its owner's, the write recorded as the session's
    activity: one statement when it can (``_fast_write``), else a transaction that finds or creates
    the thread (``thread_for_write``: its first write, the erased-subject guard, a 409 for another
    user) and then stores the rows."""
    # Raw: benchmarks/frameworks.py LangGraph step target; a write's rows as the fast path shapes them, on SQLite
    if _fast_write(tenant=tenant, writes=[write]):
        return
    with transaction.atomic():
        thread = thread_for_write(
            tenant=tenant, thread_id=write.thread_id, user_id=write.user_id, default_user_id=write.default_user_id
        )
        now = _now()
        with connection.cursor() as cursor:
            for rows in write.rows:  # SQLite's WITH holds one INSERT; a transaction holds them all
                insert = rows.insert("v")
                cursor.execute(
                    f"WITH s(id, user_id, tenant_id, updated_at) AS (VALUES (%s, %s, %s, %s)), "
                    f"{insert.values} {insert.insert}",
                    [thread.pk, thread.user_id, tenant.pk, now, *insert.values_params],
                )


def thread_writes_store(*, tenant: Tenant, writes: Sequence[ThreadWrite]) -> list[Exception | None]:
    """Store ``writes`` in order, each as if alone (its own transaction), and give each the refusal
    it would have had alone (a ``DomainError``), or None. Consecutive writes of one thread by one user whose rows are
    distinct go in one statement (``_fast_write``: a batch of the saver's group commit is a step's
    writes and checkpoint); when that finds no thread it may write, each goes alone."""
    outcomes: list[Exception | None] = []
    for group in _same_thread_runs(writes):
        if len(group) > 1 and _fast_write(tenant=tenant, writes=group):
            outcomes += [None] * len(group)
            continue
        for write in group:
            try:
                thread_write(tenant=tenant, write=write)
            except DomainError as exc:  # the refusal this write alone would have had (a fault fails them all)
                outcomes.append(exc)
            else:
                outcomes.append(None)
    return outcomes


def _same_thread_runs(writes: Sequence[ThreadWrite]) -> Iterator[list[ThreadWrite]]:
    """``writes`` in runs of one thread and user whose rows' keys are all distinct."""
    run: list[ThreadWrite] = []
    keys: set[tuple[Any, ...]] = set()
    for write in writes:
        mine = set().union(*(rows.keys() for rows in write.rows))
        first = run[0] if run else None
        if first is not None and (
            (write.thread_id, write.user_id, write.default_user_id)
            != (first.thread_id, first.user_id, first.default_user_id)
            or keys & mine
        ):
            yield run
            run, keys = [], set()
        run.append(write)
        keys |= mine
    if run:
        yield run


_CHECKPOINT_FIELDS = (
    "checkpoint_ns",
    "checkpoint_id",
    "parent_checkpoint_id",
    "metadata",
    "channel_versions",
    "run_id",
    "step",
    "source",
    "value_type",
    "value",
)


def checkpoint_put(*, tenant: Tenant, **put: Any) -> None:
    """Store a checkpoint (``checkpoint_write``'s arguments)."""
    thread_write(tenant=tenant, write=checkpoint_write(**put))


def checkpoint_write(
    *,
    thread_id: str,
    user_id: str | None,
    default_user_id: str,
    checkpoint_ns: str,
    checkpoint_id: str,
    parent_checkpoint_id: str | None,
    checkpoint: Any,
    metadata: Any,
    channel_versions: Any,
    channel_values: Any = (),
) -> ThreadWrite:
    """A checkpoint checked, to store (a repeated put of the same key replaces it, as LangGraph's
    savers do) with the values of the channels it changed, ``[{"channel", "type", "data"}]``, each
    stored at the version ``channel_versions`` gives it (a version stored already is kept: a version
    names one value). ``checkpoint`` holds the other channels' values (all of them, without any apart)."""
    checkpoint_ns, checkpoint_id = _clean_key(checkpoint_ns, checkpoint_id)
    if parent_checkpoint_id is not None:
        parent_checkpoint_id = clean_text(parent_checkpoint_id, field="parent_checkpoint_id", max_bytes=MAX_ID_BYTES)
    value = clean_typed_value(checkpoint, field="checkpoint")
    metadata = clean_json(metadata, field="metadata", require_object=True)
    channel_versions = clean_json(channel_versions, field="channel_versions", require_object=True)
    blobs = _clean_blobs(channel_values, checkpoint_ns=checkpoint_ns, channel_versions=channel_versions)
    columns = _metadata_columns(metadata)
    row = (
        checkpoint_ns,
        checkpoint_id,
        parent_checkpoint_id,
        metadata,
        channel_versions,
        columns["run_id"],
        columns["step"],
        columns["source"],
        value.type,
        value.data,
    )
    rows = [
        _Rows(
            LangGraphCheckpoint,
            _CHECKPOINT_FIELDS,
            [row],
            conflict=("session", "checkpoint_ns", "checkpoint_id"),
            update=_CHECKPOINT_FIELDS[2:],
        )
    ]
    if blobs:
        rows.append(
            _Rows(LangGraphBlob, _BLOB_FIELDS, blobs, conflict=("session", "checkpoint_ns", "channel", "version"))
        )
    return _thread_write_of(thread_id=thread_id, user_id=user_id, default_user_id=default_user_id, rows=rows)


_BLOB_FIELDS = ("checkpoint_ns", "channel", "version", "value_type", "value")


def _clean_blobs(values: Any, *, checkpoint_ns: str, channel_versions: dict[str, Any]) -> list[tuple]:
    """A put's channel values as blob rows, each at its channel's version (one per channel)."""
    if not isinstance(values, (list, tuple)):
        raise InvalidInput.for_field("channel_values", 'must be a list of {"channel", "type", "data"}.')
    rows: dict[str, tuple] = {}
    for item in values:
        if not isinstance(item, dict):
            raise InvalidInput.for_field("channel_values", 'each is {"channel": str, "type": str, "data": bytes}.')
        channel = clean_text(item.get("channel"), field="channel_values")
        if channel not in channel_versions:
            raise InvalidInput.for_field("channel_values", f"channel {channel!r} has no version in channel_versions.")
        value = clean_typed_value(item, field="channel_values")
        version = version_text(channel_versions[channel])
        rows[channel] = (checkpoint_ns, channel, version, value.type, value.data)
    return list(rows.values())


_WRITE_FIELDS = (
    "checkpoint_ns",
    "checkpoint_id",
    "task_id",
    "task_path",
    "idx",
    "channel",
    "value_type",
    "value",
)


def writes_put(*, tenant: Tenant, **put: Any) -> int:
    """Store a task's pending writes (``writes_write``'s arguments); returns how many."""
    write = writes_write(**put)
    thread_write(tenant=tenant, write=write)
    return write_count(write)


def write_count(write: ThreadWrite) -> int:
    """The pending writes a ``writes_write`` stores."""
    return sum(len(rows.rows) for rows in write.rows)


def writes_write(
    *,
    thread_id: str,
    user_id: str | None,
    default_user_id: str,
    checkpoint_ns: str,
    checkpoint_id: str,
    task_id: str,
    task_path: str,
    writes: Any,
    replace: bool,
) -> ThreadWrite:
    """A task's pending writes checked, to store. Keyed by (thread, namespace, checkpoint, task,
    idx): a retry stores nothing twice; with ``replace`` (LangGraph's special channels) a retry
    overwrites. None of them still records the write on the thread (made by its first write)."""
    checkpoint_ns, checkpoint_id = _clean_key(checkpoint_ns, checkpoint_id)
    task_id = clean_text(task_id, field="task_id", max_bytes=MAX_ID_BYTES)
    task_path = clean_text(task_path, field="task_path")
    if not isinstance(writes, list):
        raise InvalidInput.for_field("writes", "must be a list.")
    rows = []
    for write in writes:
        if not isinstance(write, dict) or isinstance(write.get("idx"), bool) or not isinstance(write.get("idx"), int):
            raise InvalidInput.for_field("writes", 'each write is {"idx": int, "channel": str, "value": {...}}.')
        if not -(2**31) <= write["idx"] < 2**31:
            raise InvalidInput.for_field("writes", "idx must be a 32-bit integer.")
        value = clean_typed_value(write.get("value"), field="writes")
        channel = clean_text(write.get("channel"), field="writes")
        rows.append(
            (
                checkpoint_ns,
                checkpoint_id,
                task_id,
                task_path,
                write["idx"],
                channel,
                value.type,
                value.data,
            )
        )
    # One row per idx: a special channel named twice in one call keeps its last value when replacing
    # (as LangGraph's savers write them in turn), its first otherwise; PostgreSQL's upsert refuses
    # to touch one row twice in a statement.
    keyed: dict[int, tuple] = {}
    for row in rows:
        if replace or row[4] not in keyed:
            keyed[row[4]] = row
    stored = [
        _Rows(
            LangGraphWrite,
            _WRITE_FIELDS,
            list(keyed.values()),
            conflict=("session", "checkpoint_id", "checkpoint_ns", "task_id", "idx"),
            update=("task_path", "channel", "value_type", "value") if replace else (),
        )
    ]
    return _thread_write_of(
        thread_id=thread_id, user_id=user_id, default_user_id=default_user_id, rows=stored if keyed else []
    )


# --- Thread-wide operations ----------------------------------------------------------------------


def _of_user(rows: QuerySet[Any], user_id: str | None) -> QuerySet[Any]:
    """``rows`` of that user only (the ``user_id`` a caller confines itself to), or all of them."""
    return rows if user_id is None else rows.filter(user_id=user_id)


def _thread_find(*, tenant: Tenant, thread_id: str, user_id: str | None = None) -> LangGraphThread | None:
    thread_id = clean_text(thread_id, field="thread_id")
    return _of_user(LangGraphThread.objects.filter(tenant=tenant, thread_key=thread_key(thread_id)), user_id).first()


@transaction.atomic
def thread_delete(*, tenant: Tenant, thread_id: str, user_id: str | None = None) -> bool:
    """Delete the thread (its session, checkpoints and writes); a missing thread, or with
    ``user_id`` another user's, is no error."""
    thread = _thread_find(tenant=tenant, thread_id=thread_id, user_id=user_id)
    if thread is None:
        return False
    session_delete(session=thread.session)
    return True


@transaction.atomic
def thread_copy(*, tenant: Tenant, source_thread_id: str, target_thread_id: str, user_id: str | None = None) -> int:
    """Copy every checkpoint and write of a thread to another, owned by the source's user (a
    target owned by someone else is refused). Two INSERT ... SELECT statements whatever the size;
    rows the target already has are kept. Returns the checkpoints copied; a missing source (or
    with ``user_id`` another user's) copies nothing."""
    # Raw: no ORM form of INSERT ... SELECT (a thread copied in two statements whatever its size)
    source = _thread_find(tenant=tenant, thread_id=source_thread_id, user_id=user_id)
    if source is None:
        clean_text(target_thread_id, field="target_thread_id", allow_empty=False)
        return 0
    target = thread_for_write(
        tenant=tenant, thread_id=target_thread_id, user_id=source.user_id, default_user_id=source.user_id
    )
    copied = 0
    for model in (LangGraphCheckpoint, LangGraphWrite, LangGraphBlob):
        columns = [
            f.column
            for f in model._meta.concrete_fields
            if f.column and f.column not in ("id", "session_id", "user_id")
        ]
        quote = connection.ops.quote_name
        names = ", ".join(quote(c) for c in columns)
        sql = (
            f"INSERT INTO {quote(model._meta.db_table)} (session_id, user_id, {names}) "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
            f"SELECT %s, %s, {names} FROM {quote(model._meta.db_table)} WHERE session_id = %s "
            f"ORDER BY id ON CONFLICT DO NOTHING"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [target.pk, target.user_id, source.pk])
            if model is LangGraphCheckpoint:
                copied = cursor.rowcount
    return copied


def _threads_find(*, tenant: Tenant, thread_ids: Any, user_id: str | None) -> list[int]:
    if not isinstance(thread_ids, list):
        raise InvalidInput.for_field("thread_ids", "must be a list of thread ids.")
    keys = [thread_key(clean_text(t, field="thread_ids")) for t in thread_ids]
    threads = _of_user(LangGraphThread.objects.filter(tenant=tenant, thread_key__in=keys), user_id)
    return list(threads.values_list("pk", flat=True))


def checkpoints_keep_latest(session_pks: list[int], keep: int, dry_run: bool) -> int:
    """Retention's ``keep_latest_checkpoints`` over these sessions (locked by the sweep): the
    ``keep`` newest checkpoints of each namespace stay with their writes, orphaned writes go, so
    every thread's latest state can still be rebuilt; channel values no kept checkpoint names go too.
    Returns the checkpoints, writes and channel values removed (dry: counted, the same rows)."""
    doomed = rows_past_latest(
        LangGraphCheckpoint, session_pks, partition=["session_id", "checkpoint_ns"], order="checkpoint_id", keep=keep
    )
    if not doomed:
        return 0
    kept = LangGraphCheckpoint.objects.exclude(pk__in=doomed)
    writes = orphan_writes(session_pks, checkpoints=kept)
    blobs = orphan_blobs(session_pks, checkpoints=kept)
    if dry_run:
        return len(doomed) + writes.count() + blobs.count()
    return LangGraphCheckpoint.objects.filter(pk__in=doomed).delete()[0] + writes.delete()[0] + blobs.delete()[0]


def orphan_writes(session_pks, *, checkpoints: QuerySet | None = None) -> QuerySet:
    """These sessions' writes with no checkpoint among ``checkpoints`` (default: every stored one)."""
    has_checkpoint = (LangGraphCheckpoint.objects.all() if checkpoints is None else checkpoints).filter(
        session_id=OuterRef("session_id"),
        checkpoint_ns=OuterRef("checkpoint_ns"),
        checkpoint_id=OuterRef("checkpoint_id"),
    )
    return LangGraphWrite.objects.filter(session_id__in=session_pks).exclude(Exists(has_checkpoint))


def _version_key(version: Any) -> str | None:
    """``version_text`` of a stored version; None for one no blob can have (not a string or number)."""
    try:
        return version_text(version)
    except InvalidInput:
        return None


def orphan_blobs(session_pks, *, checkpoints: QuerySet | None = None) -> QuerySet:
    """These sessions' channel values that no checkpoint among ``checkpoints`` (default: every
    stored one) names in its ``channel_versions``. Worked out here rather than in SQL: the versions
    are JSON, read the same way on both databases."""
    named = set()
    kept = LangGraphCheckpoint.objects.all() if checkpoints is None else checkpoints
    kept = kept.filter(session_id__in=session_pks)
    for session_id, ns, versions in kept.values_list("session_id", "checkpoint_ns", "channel_versions").iterator():
        for channel, version in (versions if isinstance(versions, dict) else {}).items():
            named.add((session_id, ns, channel, _version_key(version)))
    stored = LangGraphBlob.objects.filter(session_id__in=session_pks)
    orphans = [
        pk
        for pk, *key in stored.values_list("pk", "session_id", "checkpoint_ns", "channel", "version").iterator()
        if tuple(key) not in named
    ]
    return LangGraphBlob.objects.filter(pk__in=orphans)


def orphans_delete(session_pks) -> int:
    """Writes whose checkpoint is gone, and channel values no checkpoint names any more."""
    return orphan_writes(session_pks).delete()[0] + orphan_blobs(session_pks).delete()[0]


@transaction.atomic
def threads_prune(*, tenant: Tenant, thread_ids: Any, strategy: Any, user_id: str | None = None) -> int:
    """``keep_latest``: only the newest checkpoint of each namespace (with its writes) stays;
    ``delete``: every checkpoint and write goes (the thread itself stays). Returns checkpoints
    deleted; unknown threads (with ``user_id``, other users' too) are skipped."""
    if strategy not in PRUNE_STRATEGIES:
        raise InvalidInput.for_field("strategy", f"must be one of {', '.join(PRUNE_STRATEGIES)}.")
    session_pks = _threads_find(tenant=tenant, thread_ids=thread_ids, user_id=user_id)
    if not session_pks:
        return 0
    list(Session.objects.select_for_update().filter(pk__in=session_pks).order_by("pk").values_list("pk", flat=True))
    sessions_hold_check(tenant=tenant, session_pks=session_pks, what="this thread's checkpoints")
    doomed = LangGraphCheckpoint.objects.filter(session_id__in=session_pks)
    if strategy == "keep_latest":
        latest = (
            LangGraphCheckpoint.objects.filter(
                session_id=OuterRef("session_id"), checkpoint_ns=OuterRef("checkpoint_ns")
            )
            .order_by("-checkpoint_id")
            .values("checkpoint_id")[:1]
        )
        doomed = doomed.exclude(checkpoint_id=Subquery(latest))
    deleted = doomed.delete()[0]
    orphans_delete(session_pks)
    return deleted


@transaction.atomic
def runs_delete(*, tenant: Tenant, run_ids: Any, user_id: str | None = None) -> int:
    """Delete the tenant's (with ``user_id``, that user's) checkpoints made by these runs
    (``metadata.run_id``) with their writes."""
    if not isinstance(run_ids, list):
        raise InvalidInput.for_field("run_ids", "must be a list of run ids.")
    run_ids = [clean_text(r, field="run_ids", max_bytes=MAX_ID_BYTES) for r in run_ids]
    if not run_ids:
        return 0
    doomed = _of_user(LangGraphCheckpoint.objects.filter(tenant=tenant, run_id__in=run_ids), user_id)
    session_pks = list(doomed.values_list("session_id", flat=True).distinct())
    if not session_pks:
        return 0
    list(Session.objects.select_for_update().filter(pk__in=session_pks).order_by("pk").values_list("pk", flat=True))
    sessions_hold_check(tenant=tenant, session_pks=session_pks, what="these runs' checkpoints")
    deleted = doomed.delete()[0]
    orphans_delete(session_pks)
    return deleted
