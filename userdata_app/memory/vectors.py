"""Semantic search of memory items, as LangGraph's ``InMemoryStore`` does it with an index: the
client embeds (the server holds no model and calls no third party) and sends one vector per field
path with a put and the query's vector with a search; the server keeps the vectors with the item
(``MemoryVector``, float32 bytes) and ranks exactly by cosine similarity (no approximate index:
pgvector is not assumed).

The ranking: an item is scored by its best vector; the scored items come first, best first; the
items under the prefix matching the filter that have no vector (of the query's length) follow with
score None. Ties, and the items without a score, go most recently updated first, then by
namespace and key: the order of a search without a query. Filter, limit and offset apply to that
list.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from agentstate import statements
from agentstate.exceptions import InvalidInput
from agentstate.tenancy.models import Tenant
from userdata_app.memory import filters, selectors, vector_cache
from userdata_app.memory.models import KEY_MAX_LENGTH, MemoryGeneration, MemoryItem, MemoryVector

MAX_DIMS = 4096  # text-embedding-3-large has 3072
MAX_VECTORS = 100  # a put's: one per field path, or per element of a [*] path
DTYPE = np.dtype("<f4")


def vector_clean(value: Any, *, field: str) -> bytes:
    """A vector as the API takes it (a list of finite numbers), as stored: float32 bytes."""
    ok = isinstance(value, list) and 0 < len(value) <= MAX_DIMS
    if ok:
        ok = all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) < 3e38
            for x in value
        )
    if not ok:
        raise InvalidInput.for_field(field, f"must be a list of 1 to {MAX_DIMS} finite numbers.")
    return np.asarray(value, dtype=DTYPE).tobytes()


def vectors_clean(value: Any, *, field: str, stored: bool) -> list[tuple[str, bytes]] | None:
    """A put's ``vectors``: ``[{"path", "vector"}]``, one per field path (none on a delete).
    None (absent): the put carries no index, and the item keeps no vector."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_VECTORS:
        raise InvalidInput.for_field(field, f"must be a list of at most {MAX_VECTORS} vectors.")
    if value and not stored:
        raise InvalidInput.for_field(field, "must be empty on a delete (a put with no value).")
    clean: dict[str, bytes] = {}
    for j, entry in enumerate(value):
        where = f"{field}[{j}]"
        if not isinstance(entry, dict) or set(entry) != {"path", "vector"}:
            raise InvalidInput.for_field(where, "must be an object of path and vector.")
        path = entry["path"]
        if not isinstance(path, str) or not 0 < len(path) <= KEY_MAX_LENGTH or "\x00" in path:
            raise InvalidInput.for_field(f"{where}.path", f"must be a string of 1 to {KEY_MAX_LENGTH} characters.")
        if path in clean:
            raise InvalidInput.for_field(f"{where}.path", "names a path given already.")
        clean[path] = vector_clean(entry["vector"], field=f"{where}.vector")
    return list(clean.items())


def vectors_replace(tenant: Tenant, ops: list[dict[str, Any]], now) -> None:
    """The items this batch wrote (their ``updated_at`` is the batch's ``now``) keep exactly the
    vectors their put carried: a put without an index leaves none (its value's old vectors no longer
    describe it). A conditional put that stored nothing leaves the item's vectors alone."""
    wanted = {(selectors.namespace_text(op["namespace"]), op["key"]): op.get("vectors") or [] for op in ops}
    if not wanted:
        return
    written = MemoryItem.objects.filter(
        tenant=tenant, updated_at=now, namespace__in={ns for ns, _ in wanted}, key__in={key for _, key in wanted}
    )
    MemoryVector.objects.filter(item__in=written.values("pk")).delete()  # one statement: nothing hangs off
    if not any(wanted.values()):
        return
    pks = {pk: (ns, key) for pk, ns, key in written.values_list("pk", "namespace", "key") if (ns, key) in wanted}
    MemoryVector.objects.bulk_create(
        [MemoryVector(item_id=pk, path=path, vector=data) for pk, name in pks.items() for path, data in wanted[name]]
    )


PENDING = "userdata_app_memorygeneration_pending"  # a writing transaction's counters to move (migration 0021)
_FETCH = 1_000  # a filter's search missing more of the worker's copy reads the scope whole (within the bound)
_CHUNK = 4_096  # vectors read by id at a time
_NONE = np.zeros(0, np.int64)


def _live(rows: QuerySet[MemoryItem], rest: dict[str, Any], alias: str) -> tuple[np.ndarray, np.ndarray]:
    """Each (item, vector id) of ``rows`` in their order (-1: an item with no vector), in one query
    that reads no vector's bytes. An item's rows (one per vector) are consecutive: the order is
    total on items."""
    # Raw: benchmarks/semantic.py by-meaning p99 target: rows as they come, no ORM rows built
    pairs = rows.values_list("pk", Coalesce("vectors__pk", Value(-1)), *(("value",) if rest else ()))
    if rest:
        found = [(pk, vector) for pk, vector, value in pairs.iterator() if filters.value_matches(value, rest)]
    else:
        sql, params = pairs.query.get_compiler(alias).as_sql()
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, params)
            found = cursor.fetchall()
    table = np.array(found, dtype=np.int64).reshape(-1, 2)
    return table[:, 0], table[:, 1]


def _matrix(ids: list[int], blobs: list[Any], other: list[int], nbytes: int) -> vector_cache.Matrix:
    rows = np.frombuffer(b"".join(blobs), dtype=DTYPE).reshape(len(blobs), nbytes // DTYPE.itemsize)
    ids_array, other_array = np.array(ids, np.int64), np.array(other, np.int64)
    return vector_cache.Matrix(ids=ids_array, rows=rows, norms=np.linalg.norm(rows, axis=1), other=other_array)


def _chunks(vectors: QuerySet[MemoryVector], ids: np.ndarray, nbytes: int) -> Iterator[vector_cache.Matrix]:
    """The vectors of ``ids`` (sorted), ``_CHUNK`` at a time, each chunk read by its ids (binary
    rows): those of ``nbytes`` bytes as rows, the others' ids apart. Not the scope's subquery
    through a server-side cursor: PostgreSQL plans a cursor for its first rows, and its estimate of
    a prefix's rows (a few for thousands) made that plan a nested loop over every vector stored."""
    # Raw: benchmarks/semantic.py first (cold) search: the scope's vectors as binary
    for start in range(0, len(ids), _CHUNK):
        chunk = vectors.filter(pk__in=ids[start : start + _CHUNK].tolist()).order_by("pk").values_list("pk", "vector")
        sql, params = chunk.query.get_compiler(vectors.db).as_sql()
        found, blobs, other = [], [], []
        for pk, blob in statements.binary_rows(sql, params, database=connections[vectors.db]):
            if len(blob) == nbytes:
                found.append(pk)
                blobs.append(blob)
            else:
                other.append(pk)
        yield _matrix(found, blobs, other, nbytes)


def _joined(parts: list[vector_cache.Matrix], nbytes: int) -> vector_cache.Matrix:
    """One copy of several, ids sorted (parts read in order of their ids are not copied twice)."""
    ids = np.concatenate([_NONE, *(part.ids for part in parts)])
    rows = np.concatenate([np.zeros((0, nbytes // DTYPE.itemsize), DTYPE), *(part.rows for part in parts)])
    norms = np.concatenate([np.zeros(0, DTYPE), *(part.norms for part in parts)])
    other = np.sort(np.concatenate([_NONE, *(part.other for part in parts)]))
    if np.any(ids[1:] < ids[:-1]):
        order = np.argsort(ids, kind="stable")
        ids, rows, norms = ids[order], rows[order], norms[order]
    return vector_cache.Matrix(ids=ids, rows=rows, norms=norms, other=other)


def _cosine(matrix: vector_cache.Matrix, query: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row to ``query`` (a vector of zero length scores 0, as in LangGraph)."""
    norms = matrix.norms * np.linalg.norm(query)
    dots = matrix.rows @ query
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms != 0)


def _contains(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Which of ``ids`` are in ``sorted_ids`` (sorted)."""
    where = np.minimum(np.searchsorted(sorted_ids, ids), max(len(sorted_ids) - 1, 0))
    return sorted_ids[where] == ids if len(sorted_ids) else np.zeros(len(ids), bool)


def _similarities(
    key: tuple[Any, ...],
    scope: Callable[[], QuerySet[MemoryItem]],
    wanted: np.ndarray,
    query: np.ndarray,
    alias: str,
    *,
    complete: bool,
) -> np.ndarray:
    """The similarity of each of the ``wanted`` vector ids to ``query`` (NaN: none, or of another
    length), from the worker's copy of the scope (``vector_cache``), reading the vectors it lacks
    (a filter's search reads the scope whole when it lacks many and the scope fits the cache's
    bound, for the searches of other filters). ``complete``: ``wanted`` is all the scope holds, and
    the copy drops any other (a vector deleted, replaced, expired or erased leaves the worker at the
    scope's next search)."""
    nbytes = query.nbytes
    copy = vector_cache.cached(key)
    if not isinstance(copy, vector_cache.Matrix):
        copy = _matrix([], [], [], nbytes)
    present = wanted[wanted >= 0]
    in_ids, in_other = _contains(copy.ids, present), _contains(copy.other, present)
    if complete and int(in_ids.sum() + in_other.sum()) < len(copy.ids) + len(copy.other):
        live = np.sort(present)
        kept_ids, kept_other = _contains(live, copy.ids), _contains(live, copy.other)
        copy = vector_cache.Matrix(
            ids=copy.ids[kept_ids], rows=copy.rows[kept_ids], norms=copy.norms[kept_ids], other=copy.other[kept_other]
        )
    missing = present[~(in_ids | in_other)]
    vectors = MemoryVector.objects.using(alias)
    if not complete and len(missing) > _FETCH:
        every = np.array(vectors.filter(item__in=scope().values("pk")).values_list("pk", flat=True), np.int64)
        if len(every) * nbytes <= vector_cache.limit_bytes():
            missing = every[~(_contains(copy.ids, every) | _contains(copy.other, every))]
    fresh = list(_chunks(vectors, np.sort(missing), nbytes))
    matrix = _joined([copy, *fresh], nbytes) if fresh else copy
    if matrix is not vector_cache.cached(key):  # kept once the reading transaction commits
        keep = partial(vector_cache.keep, key, matrix)
        transaction.on_commit(keep, using=alias)  # at once outside a transaction
    found = np.full(len(wanted), np.nan, DTYPE)
    if len(matrix.ids):
        sims = _cosine(matrix, query)
        where = np.minimum(np.searchsorted(matrix.ids, wanted), len(matrix.ids) - 1)
        hit = matrix.ids[where] == wanted
        found[hit] = sims[where[hit]]
    return found


def _generation(alias: str, tenant: Tenant, prefix: list[str]) -> int:
    """The counters a scope's listing depends on (``MemoryGeneration``): its person's bucket when the
    prefix names one, else the sum of the tenant's (each only grows, so the sum moves with any). On
    PostgreSQL they move as a writing transaction commits: within one, its own writes' pending
    pairs count too (migration 0021)."""
    # Raw: benchmarks/semantic.py by-meaning p99 target; no ORM form of hashtext's bucket
    connection = connections[alias]
    table = connection.ops.quote_name(MemoryGeneration._meta.db_table)
    where = "tenant_pk = %s"
    params: list[Any] = [tenant.pk]
    if connection.vendor != "postgresql":
        sql = f"SELECT COALESCE(SUM(value), 0) FROM {table} WHERE {where}"  # noqa: S608
    else:
        if len(prefix) >= 2 and prefix[0] == selectors.USERS:
            where, params = f"{where} AND bucket = (hashtext(%s) & 63)", [tenant.pk, selectors.label_user(prefix[1])]
        own = f"SELECT count(*) FROM {PENDING} WHERE txid = txid_current_if_assigned() AND {where}"  # noqa: S608
        sql, params = f"SELECT ({own}) + (SELECT COALESCE(SUM(value), 0) FROM {table} WHERE {where})", params * 2  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.fetchone()[0])


def _listed(alias: str, tenant: Tenant, prefix: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``_live`` of a scope with no filter, from the worker's listing while its generation stands."""
    key = ("listing", alias, tenant.pk, selectors.namespace_text(prefix))
    generation = _generation(alias, tenant, prefix)  # before the listing: a write between moves it
    listing = vector_cache.cached(key)
    if not isinstance(listing, vector_cache.Listing) or listing.generation != generation:
        rows = selectors.under_prefix(MemoryItem.objects.filter(tenant=tenant), prefix)
        rows = rows.order_by("-updated_at", "namespace", "key")
        found = list(rows.values_list("pk", Coalesce("vectors__pk", Value(-1)), "expires_at"))
        table = np.array([(pk, vector) for pk, vector, _ in found], dtype=np.int64).reshape(-1, 2)
        expires = [at.timestamp() if at is not None else math.inf for _, _, at in found]
        listing = vector_cache.Listing(generation, table[:, 0], table[:, 1], np.array(expires, dtype=np.float64))
        transaction.on_commit(partial(vector_cache.keep, key, listing), using=alias)
    live = listing.expires > timezone.now().timestamp()  # as live_items
    return listing.items[live], listing.vectors[live]


def memory_vector_search(
    *,
    tenant: Tenant,
    namespace_prefix: list[str],
    filter: dict[str, Any] | None,
    vector: bytes,
    limit: int,
    offset: int,
) -> list[tuple[MemoryItem, float | None]]:
    """The live items under the prefix matching the filter, ranked by ``vector`` (module docstring)."""
    alias = router.db_for_read(MemoryItem)
    scope = partial(selectors.under_prefix, selectors.live_items(tenant=tenant), namespace_prefix)
    if filter:
        rows, rest = selectors.filtered(scope(), filter, alias=alias)
        item_pks, vector_pks = _live(rows.order_by("-updated_at", "namespace", "key"), rest, alias)
    else:
        item_pks, vector_pks = _listed(alias, tenant, namespace_prefix)
    if not len(item_pks):
        return []
    query = np.frombuffer(vector, dtype=DTYPE)
    compared = int(np.count_nonzero(vector_pks >= 0))
    if compared * query.nbytes > vector_cache.limit_bytes():
        raise InvalidInput.for_field(
            "namespace_prefix",
            f"has {compared:,} vector(s) under it, more than a search by meaning compares at once "
            f"({settings.MEMORY_VECTOR_CACHE_MB:g} MB of them, AGENTSTATE_MEMORY_VECTOR_CACHE_MB): search within a "
            "person's namespace, or narrow it with a filter.",
        )
    key = ("vectors", alias, tenant.pk, selectors.namespace_text(namespace_prefix), query.nbytes)
    sims = _similarities(key, scope, vector_pks, query, alias, complete=not filter)
    starts = np.flatnonzero(np.concatenate([[True], item_pks[1:] != item_pks[:-1]]))
    items = item_pks[starts]
    scored_rows = ~np.isnan(sims)
    best = np.maximum.reduceat(np.where(scored_rows, sims, -np.inf), starts)  # an item's best vector
    has = np.logical_or.reduceat(scored_rows, starts)
    scored = np.flatnonzero(has)
    scored = scored[np.lexsort((scored, -best[scored]))]  # best first, then in the items' order
    page = np.concatenate([scored, np.flatnonzero(~has)])[offset : offset + limit]
    found = MemoryItem.objects.using(alias).in_bulk(items[page].tolist())
    return [
        (found[pk], float(best[i]) if has[i] else None)
        for i, pk in zip(page.tolist(), items[page].tolist(), strict=True)
        if pk in found  # gone since the ranking read it: skipped
    ]
