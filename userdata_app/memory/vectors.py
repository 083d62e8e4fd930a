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
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
from django.db import router
from django.db.models import QuerySet

from agentstate.exceptions import InvalidInput
from agentstate.tenancy.models import Tenant
from userdata_app.memory import filters, selectors
from userdata_app.memory.models import KEY_MAX_LENGTH, MemoryItem, MemoryVector

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


def _scores(query: np.ndarray, rows: Iterable[tuple[int, bytes | memoryview]]) -> dict[int, float]:
    """Each item's best cosine similarity to ``query`` (a vector of zero length scores 0, as in
    LangGraph); vectors of another length than the query's are not compared."""
    blobs = [(pk, blob) for pk, blob in rows if len(blob) == query.nbytes]
    if not blobs:
        return {}
    matrix = np.frombuffer(b"".join(blob for _, blob in blobs), dtype=DTYPE).reshape(len(blobs), -1)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
    dots = matrix @ query
    similarity = np.divide(dots, norms, out=np.zeros_like(dots), where=norms != 0)
    best: dict[int, float] = defaultdict(lambda: -math.inf)
    for (pk, _), score in zip(blobs, similarity.tolist(), strict=True):
        if score > best[pk]:
            best[pk] = score
    return dict(best)


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
    rows: QuerySet[MemoryItem] = selectors.under_prefix(selectors.live_items(tenant=tenant), namespace_prefix)
    rows, rest = selectors.filtered(rows, filter, alias=alias)
    rows = rows.using(alias).order_by("-updated_at", "namespace", "key")
    # One query: every item in order, with each of its vectors (a LEFT JOIN: None for none).
    order: dict[int, None] = {}
    stored: list[tuple[int, bytes | memoryview]] = []
    for pk, value, blob in rows.values_list("pk", "value" if rest else "pk", "vectors__vector").iterator():
        if rest and not filters.value_matches(value, rest):
            continue
        order[pk] = None
        if blob is not None:
            stored.append((pk, blob))
    scores = _scores(np.frombuffer(vector, dtype=DTYPE), stored)
    position = {pk: i for i, pk in enumerate(order)}
    scored = sorted(scores, key=lambda pk: (-scores[pk], position[pk]))
    page = (scored + [pk for pk in order if pk not in scores])[offset : offset + limit]
    items = MemoryItem.objects.using(alias).in_bulk(page)
    return [(items[pk], scores.get(pk)) for pk in page if pk in items]
