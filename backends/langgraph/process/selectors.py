"""Reads of the LangGraph checkpointer. Every query is scoped by the caller's tenant and served
by an index: a thread by (tenant, key), checkpoints by (session, namespace, id) or (session, id),
a page's writes by (session, checkpoint id)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from operator import itemgetter
from typing import Any, NamedTuple

import orjson
from django.db import DEFAULT_DB_ALIAS, connection, connections, router
from django.db.models import BigIntegerField, Count, Expression, OuterRef, QuerySet, Subquery, Sum
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Coalesce, Length
from django.db.models.sql import Query

from agentstate.api.json_rows import ByteBudget
from agentstate.statements import binary_rows
from agentstate.streaming import stored_size
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_json
from backends.langgraph.process.models import LangGraphBlob, LangGraphCheckpoint, LangGraphThread, LangGraphWrite
from backends.langgraph.process.services import (
    MAX_ID_BYTES,
    MAX_NS_BYTES,
    clean_text,
    thread_key,
)
from sessions_app.models import Session


def _thread_pk(*, tenant: Tenant, thread_id: str) -> Subquery:
    """The thread's session pk as a scalar subquery: one statement, and PostgreSQL knows the one
    session when it reads the newest checkpoint backwards on the (session, namespace, id) index."""
    key = thread_key(clean_text(thread_id, field="thread_id"))
    return Subquery(LangGraphThread.objects.filter(tenant=tenant, thread_key=key).values("pk"))


def thread_session_pk(*, tenant: Tenant, thread_id: str, user_id: str) -> int | None:
    """The session of the tenant's thread, when ``user_id`` owns it (a memory item's source)."""
    threads = LangGraphThread.objects.filter(tenant=tenant, thread_key=thread_key(thread_id), user_id=user_id)
    return threads.values_list("pk", flat=True).first()


def clean_filter(value: dict[str, Any] | None) -> dict[str, Any]:
    """The ``filter`` query parameter (parsed from its JSON text): metadata keys and the values
    they equal; none when absent or blank."""
    return clean_json(value or {}, field="filter", require_object=True)


def checkpoint_list(
    *,
    tenant: Tenant,
    thread_id: str | None = None,
    checkpoint_ns: str | None = None,
    checkpoint_id: str | None = None,
    before: str | None = None,
    metadata_filter: dict[str, Any] | None = None,
    user_id: str | None = None,
) -> QuerySet[LangGraphCheckpoint]:
    """Checkpoints newest first (descending id, as LangGraph lists them): of one user's threads,
    of one thread, of one namespace, of one id when given, before a checkpoint id, whose metadata
    has the given key values. The caller pages it with a cursor on the id, so no thread is ever
    read whole."""
    rows = LangGraphCheckpoint.objects.filter(tenant=tenant)
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    if thread_id is not None:
        rows = rows.filter(session_id=_thread_pk(tenant=tenant, thread_id=thread_id))
    if checkpoint_ns is not None:
        rows = rows.filter(checkpoint_ns=clean_text(checkpoint_ns, field="checkpoint_ns", max_bytes=MAX_NS_BYTES))
    if checkpoint_id is not None:
        rows = rows.filter(checkpoint_id=clean_text(checkpoint_id, field="checkpoint_id", max_bytes=MAX_ID_BYTES))
    if before is not None:
        rows = rows.filter(checkpoint_id__lt=clean_text(before, field="before", max_bytes=MAX_ID_BYTES))
    for number, (key, value) in enumerate((metadata_filter or {}).items()):
        # KeyTransform, not metadata__<key>: a key holding "__" must not become a nested lookup.
        rows = rows.alias(**{f"_meta_{number}": KeyTransform(key, "metadata")}).filter(**{f"_meta_{number}": value})
    return rows.order_by("-checkpoint_id")


def checkpoint_page_size() -> Expression:
    """The bytes a checkpoint's answer in a page holds (in a query of checkpoints): its metadata,
    its value, its pending writes and the channel values it names that its parent does not; what
    bounds a page of them."""
    return (
        stored_size(LangGraphCheckpoint, "metadata")
        + stored_size(LangGraphCheckpoint, "value")
        + checkpoint_writes_size()
        + checkpoint_blobs_size()
    )


# The kinds of rows of ``_first_page_sql`` and ``_values_and_writes_sql``: a write, a checkpoint (its
# value), a channel value a checkpoint names, a channel value's bytes.
_WRITE, _VALUE, _NAMED, _BLOB = 0, 1, 2, 3


@cache
def _own_size_sql(vendor: str) -> tuple[str, tuple[Any, ...]]:
    """The bytes of a checkpoint's own metadata and value (``checkpoint_page_size``'s first two
    terms), compiled once into SQL over the checkpoint table (as itself)."""
    query = Query(LangGraphCheckpoint)
    expression = stored_size(LangGraphCheckpoint, "metadata", "value").resolve_expression(query)
    sql, params = query.get_compiler(connection=connection).compile(expression)
    return sql, tuple(params)


class CheckpointRow(NamedTuple):
    """A checkpoint as a page or ``get_tuple`` answers it (not a model: a page holds fifty, and a
    model instance cost more to make than its row cost to read)."""

    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    metadata: Any  # None where the page ends (its first row left out)
    value_type: str
    value: bytes  # idem


def checkpoint_first_page(
    *,
    tenant: Tenant,
    thread_id: str,
    checkpoint_ns: str | None = None,
    checkpoint_id: str | None = None,
    before: str | None = None,
    user_id: str | None = None,
    cursor: str | None = None,
) -> Callable[[int, ByteBudget], list[CheckpointTuple]]:
    """The first page of ``checkpoint_list`` of one thread (no metadata filter), or the page after
    ``cursor`` (the position of a forward cursor: the ids before it), as a fetch of its
    first ``rows`` checkpoints within a byte budget, as ``CheckpointPagination`` pages them, each
    with its writes and values as ``checkpoint_tuples`` gives them: the checkpoints that fit, each
    counted as ``checkpoint_page_size`` counts it (at least one fits), then the first that did not
    (or the row past the page), without its state, where the next page starts. One written-out
    statement, prepared on PostgreSQL: building the ORM's query cost more than running it, and the
    page's values were a second statement (docs/PERFORMANCE.md)."""
    # Raw: benchmarks/frameworks.py LangGraph get_state_history targets; the ORM built the page query slower than it ran
    where = ["session_id = (SELECT session_id FROM {threads} WHERE tenant_id = %s AND thread_key = %s)"]
    params: list[Any] = [tenant.pk, thread_key(clean_text(thread_id, field="thread_id"))]
    for sql, value, field, max_bytes in (
        ("user_id = %s", user_id, None, 0),
        ("checkpoint_ns = %s", checkpoint_ns, "checkpoint_ns", MAX_NS_BYTES),
        ("checkpoint_id = %s", checkpoint_id, "checkpoint_id", MAX_ID_BYTES),
        ("checkpoint_id < %s", before, "before", MAX_ID_BYTES),
        ("checkpoint_id < %s", cursor, None, 0),  # checked as the pagination decoded it
    ):
        if value is not None:
            where.append(sql)
            params.append(value if field is None else clean_text(value, field=field, max_bytes=max_bytes))
    database = connections[router.db_for_read(LangGraphCheckpoint)]
    _, own_params = _own_size_sql(database.vendor)

    def fetch(rows: int, budget: ByteBudget) -> list[CheckpointTuple]:
        sql = _first_page_sql(database.vendor, " AND ".join(where), rows)  # a shape per filter and page size
        found = binary_rows(sql, [*own_params, *params, budget.limit], database=database, prepared=True)
        return _first_page(found, thread_id, budget)

    return fetch


def _first_page(found: list[tuple[Any, ...]], thread_id: str, budget: ByteBudget) -> list[CheckpointTuple]:
    """``_first_page_sql``'s rows as the page's checkpoints with their writes and values, in order."""
    checkpoints: list[tuple[int, int, bool, bool, CheckpointRow]] = []
    writes: dict[int, list[PendingWrite]] = {}
    named: dict[int, list[tuple[int, int, str, str, str]]] = {}
    values: dict[int, bytes] = {}
    for kind, ref, a, b, c, d, e, n, at, value, fits in found:
        if kind == _VALUE:  # a: id, b: parent, c: namespace, d: metadata (None past the page), n: place in the page
            wanted = d is not None
            checkpoints.append((n, ref, fits, wanted, CheckpointRow(c, a, b, _json(d) if wanted else None, e, value)))
        elif kind == _WRITE:  # a: task id, b: task path, c: channel, n: idx
            writes.setdefault(ref, []).append(PendingWrite(a, b, n, c, e, value))
        elif kind == _NAMED:  # a: channel, b: version, n: the value's pk, at: its place in channel_versions
            named.setdefault(ref, []).append((at, n, a, b, e))
        else:
            values[ref] = value
    page: list[CheckpointTuple] = []
    for _, pk, fits, wanted, row in sorted(checkpoints, key=itemgetter(0)):
        if not wanted:  # past the budget (fits false), or the row past the page
            if not fits:
                budget.rows_that_fit = len(page)
            page.append(CheckpointTuple(row, thread_id, [], []))
            break
        page.append(
            CheckpointTuple(
                row,
                thread_id,
                sorted(writes.get(pk, ()), key=_writes_order),
                [
                    ChannelValue(value, channel, version, type_, values[value])
                    for _, value, channel, version, type_ in sorted(named.get(pk, ()), key=itemgetter(0))
                ],
            )
        )
    return page


_LONG_NUMBER = re.compile("[0-9]{19}")


def _json(text: str) -> Any:
    """Stored JSON text parsed: by orjson (a third of json's time), unless a number in it may be
    past 64 bits, which orjson would read as a float (json reads an integer)."""
    return json.loads(text) if _LONG_NUMBER.search(text) else orjson.loads(text)


@lru_cache(maxsize=128)
def _first_page_sql(vendor: str, where: str, rows: int) -> str:
    """One statement, its rows ``(kind, ref, a, b, c, d, type, n, at, value, fits)`` (the letters as
    ``_first_page`` reads them): the page's first ``rows`` checkpoints, each with whether it fits:
    the sizes of the checkpoints before it hold less than the budget (the last parameter),
    ``_ByteBoundedModels``'s rule; then for each that fits and is within the page (before row
    ``rows``) its metadata, value, writes, the values it names and their bytes. Each value is found
    once (on the unique index, by the distinct channel versions the page names), each checkpoint's
    writes on theirs. No step joins two of the statement's own results row by row: the checkpoints
    that fit are the first ``k`` (sizes only add up), so each part is cut at a place in the page
    (``n``), and a parent is mostly the next row (``LEAD``, over the page only: SQLite would number
    the whole thread first). ``rows`` is written in, not bound: PostgreSQL then plans a prepared
    statement once with the estimates of a page, small enough that it never compiles the plan (JIT,
    which cost more than the statement, once a generic plan guessed a tenth of the thread: past its
    threshold)."""
    quote = connection.ops.quote_name
    table, blob = quote(LangGraphCheckpoint._meta.db_table), quote(LangGraphBlob._meta.db_table)
    write = quote(LangGraphWrite._meta.db_table)
    own, _ = _own_size_sql(vendor)
    where = where.format(threads=quote(LangGraphThread._meta.db_table))
    names = "w.session_id = page.session_id AND w.checkpoint_ns = page.checkpoint_ns"
    names += " AND w.checkpoint_id = page.checkpoint_id"

    if vendor == "postgresql":
        metadata, version, at = "metadata::text", "cv.value", "cv.at"  # JSON text, parsed once read
        # Each distinct version looked up once (inlined, the lookups ran per checkpoint naming it);
        # matched back bytewise: sorting for the merge join by the database's collation cost more.
        once, bytewise = "MATERIALIZED ", ' COLLATE "C"'
        each = "CROSS JOIN LATERAL jsonb_each_text(page.channel_versions) WITH ORDINALITY AS cv(key, value, at)"
        new = "(page.parent_versions ->> cv.key) IS DISTINCT FROM cv.value"
        # LATERAL ... LIMIT 1 / OFFSET 0: looked up on the index, never a hash join of the whole table.
        found = (
            f"CROSS JOIN LATERAL (SELECT id, value_type, LENGTH(value) AS size FROM {blob} b "  # noqa: S608 (quoted identifiers)
            f"WHERE b.session_id = v.session_id AND b.checkpoint_ns = v.checkpoint_ns AND b.channel = v.channel "
            f"AND b.version = v.version LIMIT 1) b"
        )
        written = (
            f"CROSS JOIN LATERAL (SELECT task_id, task_path, channel, value_type, idx, value FROM {write} w "  # noqa: S608 (idem)
            f"WHERE {names} OFFSET 0) w"
        )
    else:
        metadata, version, at = "metadata", "CAST(cv.value AS TEXT)", "cv.id"
        once = bytewise = ""
        each = "CROSS JOIN json_each(page.channel_versions) AS cv"
        new = (
            "NOT EXISTS (SELECT 1 FROM json_each(page.parent_versions) pv WHERE pv.key = cv.key "
            "AND CAST(pv.value AS TEXT) = CAST(cv.value AS TEXT))"
        )
        found = (
            f"JOIN (SELECT id, session_id, checkpoint_ns, channel, version, value_type, LENGTH(value) AS size "  # noqa: S608 (idem)
            f"FROM {blob}) b ON b.session_id = v.session_id AND b.checkpoint_ns = v.checkpoint_ns "
            f"AND b.channel = v.channel AND b.version = v.version"
        )
        written = f"JOIN {write} w ON {names}"
    wanted = f"n <= (SELECT k FROM fitting) AND n < {int(rows)}"  # noqa: S608 (constant SQL)
    return (
        # A parent mostly the next row: its versions from there, from the table otherwise (evaluated then only).
        f"WITH page AS (SELECT *, CASE WHEN next_id = parent_checkpoint_id AND next_ns = checkpoint_ns "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"THEN next_versions ELSE (SELECT channel_versions FROM {table} p WHERE p.session_id = page.session_id "
        f"AND p.checkpoint_ns = page.checkpoint_ns AND p.checkpoint_id = page.parent_checkpoint_id) END "
        f"AS parent_versions FROM (SELECT *, ROW_NUMBER() OVER newest AS n, "
        f"LEAD(checkpoint_id) OVER newest AS next_id, LEAD(checkpoint_ns) OVER newest AS next_ns, "
        f"LEAD(channel_versions) OVER newest AS next_versions FROM "
        f"(SELECT id, session_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, value_type, metadata, "
        f"channel_versions, {own} AS own FROM {table} WHERE {where} ORDER BY checkpoint_id DESC LIMIT {int(rows)}) "
        f"page WINDOW newest AS (ORDER BY checkpoint_id DESC)) page), "
        f"versions AS (SELECT page.id AS checkpoint, page.n, page.session_id, page.checkpoint_ns, cv.key AS channel, "
        f"{at} AS at, {version} AS version, {new} AS new FROM page {each}), "
        f"found AS {once}(SELECT v.checkpoint_ns, v.channel, v.version, b.id, b.value_type, b.size FROM "
        f"(SELECT DISTINCT session_id, checkpoint_ns, channel, version FROM versions) v {found}), "
        f"named AS (SELECT v.checkpoint, v.n, v.at, f.id, f.channel, f.version, f.value_type, f.size, v.new "
        f"FROM versions v JOIN found f ON f.checkpoint_ns = v.checkpoint_ns "
        f"AND f.channel{bytewise} = v.channel{bytewise} AND f.version{bytewise} = v.version{bytewise}), "
        f"writes AS (SELECT page.id AS checkpoint, page.n, w.task_id, w.task_path, w.channel, w.value_type, w.idx, "
        f"w.value FROM page {written}), "
        # Each checkpoint's size (its own, the values it names that its parent does not, its writes), then
        # how many fit: those before which less than the budget was counted.
        f"sizes AS (SELECT n, SUM(size) AS size FROM (SELECT n, own AS size FROM page UNION ALL SELECT n, size "
        f"FROM named WHERE new UNION ALL SELECT n, LENGTH(value) FROM writes) s GROUP BY n), "
        f"fitting AS (SELECT COUNT(*) AS k FROM (SELECT COALESCE(SUM(size) OVER (ORDER BY n ROWS BETWEEN UNBOUNDED "
        f"PRECEDING AND 1 PRECEDING), 0) < %s AS fits FROM sizes) f WHERE fits) "
        f"SELECT {_VALUE}, id, checkpoint_id, parent_checkpoint_id, checkpoint_ns, "
        f"CASE WHEN {wanted} THEN {metadata} END, value_type, n, CAST(NULL AS BIGINT), "
        f"CASE WHEN {wanted} THEN (SELECT value FROM {table} v WHERE v.id = page.id) END, "
        f"n <= (SELECT k FROM fitting) FROM page "
        f"UNION ALL SELECT {_WRITE}, checkpoint, task_id, task_path, channel, NULL, value_type, idx, NULL, value, NULL "
        f"FROM writes WHERE {wanted} "
        f"UNION ALL SELECT {_NAMED}, checkpoint, channel, version, NULL, NULL, value_type, id, at, NULL, NULL "
        f"FROM named WHERE {wanted} "
        f"UNION ALL SELECT {_BLOB}, id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, value, NULL FROM {blob} "
        f"WHERE id IN (SELECT id FROM named WHERE {wanted})"
    )


def checkpoint_writes_size() -> Coalesce:
    """The bytes of a checkpoint's pending writes (in a query of checkpoints): a page of
    checkpoints is bounded by what its answer holds, writes included."""
    writes = LangGraphWrite.objects.filter(
        session_id=OuterRef("session_id"),
        checkpoint_ns=OuterRef("checkpoint_ns"),
        checkpoint_id=OuterRef("checkpoint_id"),
    )
    total = writes.values("session_id").annotate(total=Sum(Length("value"))).values("total")
    return Coalesce(Subquery(total), 0)


def _writes_order(write: PendingWrite) -> tuple[str, str, int]:
    """LangGraph's order of a checkpoint's writes (``writes_sort_key``): Python's string order,
    not the database's collation."""
    return (write.task_path, write.task_id, write.idx)


class PendingWrite(NamedTuple):
    """A pending write as a read answers it (not a model, as ``ChannelValue``)."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    value_type: str
    value: bytes


class ChannelValue(NamedTuple):
    """A channel's value at a version, as a read answers it (``pk``: the stored row's, if read from a
    page: checkpoints naming the same value share it). Not a model: a page names a hundred of them,
    and a model instance cost more to make than the rest of the page."""

    pk: int | None
    channel: str
    version: str
    value_type: str
    value: bytes


# What a CheckpointTuple's writes carry: not the JSON view for staff, which the ORM would parse.
@dataclass(frozen=True)
class CheckpointTuple:
    checkpoint: LangGraphCheckpoint | CheckpointRow
    thread_id: str
    writes: list[PendingWrite]
    blobs: list[ChannelValue]  # the values of the channels it names a version of, stored apart

    @property
    def checkpoint_id(self) -> str:
        """Its checkpoint's id: a page's position (``CheckpointPagination``'s ordering)."""
        return self.checkpoint.checkpoint_id


def _blobs_join(checkpoint: str) -> str:
    """SQL joining the checkpoint ``checkpoint`` (an alias) to the channel values it names: each
    (channel, version) of its ``channel_versions``, the version as text as ``version_text`` writes
    it (a JSON string as it is, a number in its digits)."""
    return f"CROSS JOIN {_blobs_of(checkpoint)}"


def _blobs_of(checkpoint: str) -> str:
    """``_blobs_join`` without its CROSS JOIN: the FROM of a subquery correlated to ``checkpoint``."""
    blob = connection.ops.quote_name(LangGraphBlob._meta.db_table)
    if connection.vendor == "postgresql":
        # Each value found on the unique index: PostgreSQL would otherwise hash-join every value of
        # the thread to every pair (LIMIT 1, a key's one row, keeps the lookup a nested loop).
        return (
            f"jsonb_each_text({checkpoint}.channel_versions) AS cv(key, value) CROSS JOIN LATERAL "  # noqa: S608 (quoted identifiers and constant SQL)
            f"(SELECT id, channel, version, value_type, value FROM {blob} WHERE session_id = {checkpoint}.session_id "
            f"AND checkpoint_ns = {checkpoint}.checkpoint_ns AND channel = cv.key AND version = cv.value LIMIT 1) b"
        )
    return (
        f"json_each({checkpoint}.channel_versions) AS cv JOIN {blob} b ON b.session_id = {checkpoint}.session_id "
        f"AND b.checkpoint_ns = {checkpoint}.checkpoint_ns AND b.channel = cv.key "
        f"AND b.version = CAST(cv.value AS TEXT)"
    )


def checkpoint_blobs_size() -> RawSQL:
    """The bytes of the channel values a checkpoint names that its parent does not name at the same
    version (in a query of checkpoints): a page carries each value once (``checkpoint_tuples``), and
    a thread's checkpoints mostly share their values with their parents, so a page of checkpoints is
    bounded by what its answer holds (within one checkpoint's values: those it shares with a parent
    on the next page)."""
    # Raw: benchmarks/frameworks.py LangGraph get_state_history targets; a page's bytes sized in SQL
    table = connection.ops.quote_name(LangGraphCheckpoint._meta.db_table)
    sql = (
        f"(SELECT COALESCE(SUM(LENGTH(b.value)), 0) FROM {_blobs_of(table)} "  # noqa: S608 (quoted identifiers and constant SQL)
        f"WHERE NOT EXISTS ({_parent_names(table)}))"
    )
    return RawSQL(sql, [], output_field=BigIntegerField())  # noqa: S611 (idem)


def _parent_names(checkpoint: str) -> str:
    """A subquery (for ``_blobs_of``'s ``cv``) finding ``checkpoint``'s parent naming the channel
    ``cv.key`` at the version ``cv.value``."""
    table = connection.ops.quote_name(LangGraphCheckpoint._meta.db_table)
    parent = (
        f"SELECT 1 FROM {table} p WHERE p.session_id = {checkpoint}.session_id "  # noqa: S608 (quoted identifiers and constant SQL)
        f"AND p.checkpoint_ns = {checkpoint}.checkpoint_ns AND p.checkpoint_id = {checkpoint}.parent_checkpoint_id "
    )
    if connection.vendor == "postgresql":
        return parent + "AND p.channel_versions ->> cv.key = cv.value"
    return (
        parent.replace(f"FROM {table} p", f"FROM {table} p, json_each(p.channel_versions) pv", 1)
        + "AND pv.key = cv.key AND CAST(pv.value AS TEXT) = CAST(cv.value AS TEXT)"
    )


def checkpoint_blobs(checkpoints: Sequence[LangGraphCheckpoint]) -> None:
    """Attach to each checkpoint the channel values it names (``blobs``: its ``rendered`` shows
    them), in two queries whatever their number: which values each names, then each value once,
    shared by the checkpoints naming it (a thread's checkpoints mostly name their parent's values).
    What staff and exports read of a checkpoint's state."""
    named: dict[int, list[int]] = {}
    blobs: dict[int, LangGraphBlob] = {}
    if checkpoints:
        table = connection.ops.quote_name(LangGraphCheckpoint._meta.db_table)
        marks = ", ".join(["%s"] * len(checkpoints))
        pairs = binary_rows(
            f"SELECT c.id, b.id FROM {table} c {_blobs_join('c')} WHERE c.id IN ({marks}) ORDER BY c.id, b.id",  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
            [c.pk for c in checkpoints],
        )
        for checkpoint_pk, blob_pk in pairs:
            named.setdefault(checkpoint_pk, []).append(blob_pk)
        wanted = sorted({blob_pk for _, blob_pk in pairs})
        if wanted:
            blob, marks = connection.ops.quote_name(LangGraphBlob._meta.db_table), ", ".join(["%s"] * len(wanted))
            sql = f"SELECT id, channel, version, value_type, value FROM {blob} WHERE id IN ({marks})"  # noqa: S608 (idem)
            for pk, channel, version, value_type, value in binary_rows(sql, wanted):
                blobs[pk] = LangGraphBlob(pk=pk, channel=channel, version=version, value_type=value_type, value=value)
    for checkpoint in checkpoints:
        checkpoint.blobs = [blobs[pk] for pk in named.get(checkpoint.pk, ()) if pk in blobs]  # type: ignore[attr-defined]
        checkpoint.__dict__.pop("rendered", None)


def checkpoint_tuples(checkpoints: list[LangGraphCheckpoint], *, thread_id: str | None = None) -> list[CheckpointTuple]:
    """The checkpoints with their thread ids, pending writes (in LangGraph's order: task path, task
    id, idx) and channel values: one query for a page of one thread (``thread_id`` given), two
    otherwise. A checkpoint whose value was deferred (a page of them) gets it in the writes' query.
    A value several checkpoints name (a channel no step between them changed) is read once, and
    their ``blobs`` share it (the same ``pk`` and bytes)."""
    if not checkpoints:
        return []
    session_pks = {c.session_id for c in checkpoints}
    if thread_id is not None:
        thread_ids = dict.fromkeys(session_pks, thread_id)
    else:
        thread_ids = dict(LangGraphThread.objects.filter(pk__in=session_pks).values_list("pk", "thread_id"))
    unread = [c.pk for c in checkpoints if "value" in c.get_deferred_fields()]
    values: dict[int, bytes] = {}
    writes: dict[tuple[int, str, str], list[PendingWrite]] = {}
    named: dict[int, list[tuple[int, str, str, str]]] = {}
    blob_values: dict[int, bytes] = {}
    sql, params = _values_and_writes_sql(
        unread, sorted(session_pks), sorted({c.checkpoint_id for c in checkpoints}), [c.pk for c in checkpoints]
    )
    database = connections[checkpoints[0]._state.db or DEFAULT_DB_ALIAS]  # where they came from
    rows = binary_rows(sql, params, database=database, prepared=True)  # two shapes (``_among``)
    for kind, pk, session_id, ns, checkpoint_id, task_id, task_path, idx, channel, version, value_type, value in rows:
        if kind == _WRITE:
            write = PendingWrite(task_id, task_path, idx, channel, value_type, value)
            writes.setdefault((session_id, ns, checkpoint_id), []).append(write)
        elif kind == _VALUE:
            values[pk] = value
        elif kind == _NAMED:  # idx: the value's pk
            named.setdefault(pk, []).append((idx, channel, version, value_type))
        else:
            blob_values[pk] = value
    for checkpoint in checkpoints:
        if checkpoint.pk in values:
            checkpoint.value = values[checkpoint.pk]
    return [
        CheckpointTuple(
            checkpoint=c,
            thread_id=thread_ids[c.session_id],
            writes=sorted(writes.get((c.session_id, c.checkpoint_ns, c.checkpoint_id), []), key=_writes_order),
            blobs=[
                ChannelValue(pk, channel, version, value_type, blob_values[pk])
                for pk, channel, version, value_type in named.get(c.pk, [])
            ],
        )
        for c in checkpoints
    ]


def _values_and_writes_sql(
    checkpoint_pks: list[int], session_pks: list[int], checkpoint_ids: list[str], blobs_of: list[int]
) -> tuple[str, list[Any]]:
    """One statement, its rows ``(kind, pk, session_id, checkpoint_ns, checkpoint_id, task_id,
    task_path, idx, channel, version, value_type, value)``: the writes of those sessions'
    checkpoints with those ids, on the (session, checkpoint id) index (``_WRITE``); the values of
    ``checkpoint_pks`` (``_VALUE``); each channel value ``blobs_of``'s checkpoints name, without its
    bytes, ``idx`` its pk (``_NAMED``); and the bytes of each of those values once (``_BLOB``)."""

    quote = connection.ops.quote_name
    writes_in, writes_params = _among(("session_id", session_pks), ("checkpoint_id", checkpoint_ids))
    sql = (
        f"SELECT {_WRITE} AS kind, NULL AS id, session_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"channel, NULL AS version, value_type, value FROM {quote(LangGraphWrite._meta.db_table)} WHERE {writes_in}"
    )
    params: list[Any] = writes_params
    if checkpoint_pks:
        values_in, values_params = _among(("id", checkpoint_pks))
        sql += (
            f" UNION ALL SELECT {_VALUE}, id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, value "  # noqa: S608 (as above)
            f"FROM {quote(LangGraphCheckpoint._meta.db_table)} WHERE {values_in}"
        )
        params += values_params
    table = quote(LangGraphCheckpoint._meta.db_table)
    blobs_in, blobs_params = _among(("c.id", blobs_of))
    named = f"FROM {table} c {_blobs_join('c')} WHERE {blobs_in}"
    sql += (
        f" UNION ALL SELECT {_NAMED}, c.id, NULL, NULL, NULL, NULL, NULL, b.id, b.channel, b.version, b.value_type, "  # noqa: S608 (as above)
        f"NULL {named} UNION ALL SELECT {_BLOB}, id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, value "
        f"FROM {quote(LangGraphBlob._meta.db_table)} WHERE id IN (SELECT b.id {named})"
    )
    return sql, [*params, *blobs_params, *blobs_params]


def _among(*columns: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    """SQL for each column being one of its values, ANDed, and its parameters. On PostgreSQL one
    array per column (``= ANY(%s)``): the statement has one text whatever a page holds, so it is
    prepared (PostgreSQL plans it once per connection) and psycopg converts its text once (it
    parses a text past 4 KB, a page's ``IN`` lists, at every call); elsewhere ``IN`` lists."""
    if connection.vendor == "postgresql":
        return " AND ".join(f"{column} = ANY(%s)" for column, _ in columns), [list(v) for _, v in columns]
    sql = " AND ".join(f"{column} IN ({', '.join(['%s'] * len(values))})" for column, values in columns)
    return sql, [value for _, values in columns for value in values]


def checkpoint_tuple_get(
    *,
    tenant: Tenant,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str | None = None,
    user_id: str | None = None,
) -> CheckpointTuple | None:
    """One checkpoint with its pending writes, or the namespace's newest when no id is given; None
    when missing (or another user's thread, when ``user_id`` is given). One statement
    (LangGraph's runner starts every run with this read): the checkpoint's row, then its writes',
    found on the (session, namespace, id) and (session, id) indexes."""
    key = thread_key(clean_text(thread_id, field="thread_id"))
    checkpoint_ns = clean_text(checkpoint_ns, field="checkpoint_ns", max_bytes=MAX_NS_BYTES)
    params: list[Any] = [tenant.pk, key]
    owner = ""
    if user_id is not None:
        owner = "AND user_id = %s "
        params.append(user_id)
    params.append(checkpoint_ns)
    chosen = ""
    if checkpoint_id is not None:
        chosen = "AND checkpoint_id = %s "
        params.append(clean_text(checkpoint_id, field="checkpoint_id", max_bytes=MAX_ID_BYTES))
    quote = connection.ops.quote_name
    sql = (
        f"WITH c AS (SELECT session_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, metadata, value_type, "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"value, channel_versions FROM {quote(LangGraphCheckpoint._meta.db_table)} "
        f"WHERE session_id = (SELECT session_id FROM {quote(LangGraphThread._meta.db_table)} "
        f"WHERE tenant_id = %s AND thread_key = %s {owner}) AND checkpoint_ns = %s {chosen}"
        f"ORDER BY checkpoint_ns DESC, checkpoint_id DESC LIMIT 1) "
        f"SELECT 0 AS kind, c.checkpoint_id, c.parent_checkpoint_id, c.metadata, c.value_type, c.value, "
        f"NULL AS task_id, NULL AS task_path, NULL AS idx, NULL AS channel FROM c "
        f"UNION ALL SELECT 1, NULL, NULL, NULL, w.value_type, w.value, w.task_id, w.task_path, w.idx, w.channel "
        f"FROM {quote(LangGraphWrite._meta.db_table)} w JOIN c ON w.session_id = c.session_id "
        f"AND w.checkpoint_id = c.checkpoint_id AND w.checkpoint_ns = c.checkpoint_ns "
        f"UNION ALL SELECT 2, b.version, NULL, NULL, b.value_type, b.value, NULL, NULL, NULL, b.channel "
        f"FROM c {_blobs_join('c')} "
        f"ORDER BY kind"
    )
    rows = binary_rows(sql, params, prepared=True)  # four shapes, one per step
    if not rows:
        return None
    _, checkpoint_id, parent, metadata, value_type, value, *_ = rows[0]
    checkpoint = CheckpointRow(
        checkpoint_ns=checkpoint_ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=parent,
        # JSON text from SQLite; PostgreSQL's binary rows carry jsonb parsed
        metadata=json.loads(metadata) if isinstance(metadata, str) else metadata,
        value_type=value_type,
        value=value,
    )
    writes = [
        PendingWrite(task_id, task_path, idx, channel, type_, data)
        for kind, _, _, _, type_, data, task_id, task_path, idx, channel in rows[1:]
        if kind == 1
    ]
    blobs = [
        ChannelValue(None, channel, version, type_, data)
        for kind, version, _, _, type_, data, _, _, _, channel in rows[1:]  # a value's version in the id's place
        if kind == 2
    ]
    return CheckpointTuple(
        checkpoint=checkpoint, thread_id=thread_id, writes=sorted(writes, key=_writes_order), blobs=blobs
    )


def checkpoint_counts(sessions: Sequence[Session]) -> dict[int, int]:
    """How many checkpoints each thread holds, every namespace counted, in one query."""
    return dict(
        LangGraphCheckpoint.objects.filter(session__in=[s.pk for s in sessions])
        .values("session_id")
        .annotate(n=Count("pk"))
        .values_list("session_id", "n")
        .order_by()
    )


def _blob_sizes(checkpoints: Sequence[LangGraphCheckpoint]) -> dict[int, int]:
    """The bytes of the channel values each checkpoint names, stored apart from it."""
    # Raw: benchmarks/frameworks.py LangGraph get_state_history targets; all value bytes in one query
    if not checkpoints:
        return {}
    table = connection.ops.quote_name(LangGraphCheckpoint._meta.db_table)
    marks = ", ".join(["%s"] * len(checkpoints))
    sql = (
        f"SELECT c.id, SUM(LENGTH(b.value)) FROM {table} c {_blobs_join('c')} "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"WHERE c.id IN ({marks}) GROUP BY c.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [c.pk for c in checkpoints])
        return {pk: int(size) for pk, size in cursor.fetchall()}


TIMELINE_VALUES_BYTES = 8 * 1024 * 1024  # of stored state one timeline page reads, newest first


def thread_timeline(*, session_pk: int, limit: int) -> list[LangGraphCheckpoint]:
    """A thread's newest ``limit`` checkpoints for the admin's timeline, every namespace, with the
    stored value's size (``value_bytes``). Their values (from which staff's view of the state is
    rendered) are read newest first up to ``TIMELINE_VALUES_BYTES`` in all, so a long thread's page
    stays small; ``state_read`` says whether a checkpoint's was."""
    newest: list[LangGraphCheckpoint] = list(
        LangGraphCheckpoint.objects.filter(session_id=session_pk)
        .order_by("-checkpoint_id")  # the (session, checkpoint_id) index, read backwards
        .defer("value", "channel_versions")
        .annotate(value_bytes=Length("value"))[:limit]
    )
    apart = _blob_sizes(newest)
    budget, wanted = TIMELINE_VALUES_BYTES, []
    for checkpoint in newest:
        checkpoint.value_bytes += apart.get(checkpoint.pk, 0)  # type: ignore[attr-defined]  # the whole state
        size: int = checkpoint.value_bytes  # type: ignore[attr-defined]  # annotated above
        if size > budget:
            break
        budget -= size
        wanted.append(checkpoint.pk)
    values = dict(LangGraphCheckpoint.objects.filter(pk__in=wanted).values_list("pk", "value"))
    for checkpoint in newest:
        checkpoint.state_read = checkpoint.pk in values  # type: ignore[attr-defined]
        if checkpoint.state_read:  # type: ignore[attr-defined]
            checkpoint.value = values[checkpoint.pk]
    checkpoint_blobs([c for c in newest if c.state_read])  # type: ignore[attr-defined]
    return newest


def thread_stored_keys(
    *, tenant: Tenant, thread_id: str
) -> tuple[set[tuple[str, str]], set[tuple[str, str, str, int]]]:
    """The keys a thread holds: its checkpoints' ``(namespace, id)`` and its writes' ``(namespace,
    checkpoint id, task id, idx)``; empty sets for a thread agentstate does not hold."""
    thread = LangGraphThread.objects.filter(tenant=tenant, thread_key=thread_key(thread_id)).first()
    if thread is None:
        return set(), set()
    checkpoints = LangGraphCheckpoint.objects.filter(session_id=thread.pk).values_list("checkpoint_ns", "checkpoint_id")
    writes = LangGraphWrite.objects.filter(session_id=thread.pk).values_list(
        "checkpoint_ns", "checkpoint_id", "task_id", "idx"
    )
    return set(checkpoints), set(writes)
