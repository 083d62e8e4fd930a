"""A worker's copy of the vectors of the scopes it searches by meaning, so that a search reads
only the ids of the scope's vectors from the database, not their bytes (a person's 10,000
768-dimension vectors are 30 MB).

Exact by construction. What a scope holds (its items in order, their vectors' ids) is kept with the
generation it was read at: the database moves the generation in every transaction that writes an
item or a vector of the tenant (triggers, ``MemoryGeneration``), so a search reads one counter
and, only when it moved, the scope's ids again; a search with a filter reads its ids each time. A
vector row is never changed in place (a put
replaces an item's vectors by new rows) and its id is never reused (PostgreSQL's sequences, SQLite's
AUTOINCREMENT), so a cached id always holds the bytes the database holds under it; a search uses a
cached row only for an id its scope holds now: a vector deleted, replaced, expired or erased is never
scored, a new one is read once and added. A copy made inside a transaction is kept only once it
commits (an id of a write rolled back may be given again on SQLite).

Bounded by ``AGENTSTATE_MEMORY_VECTOR_CACHE_MB`` per worker, least recently searched scope evicted
first; a search that would compare more vectors than the bound holds is refused
(``vectors.memory_vector_search``): read from the database at every search, it would take minutes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings


@dataclass(frozen=True)
class Matrix:
    """The vectors of one byte length under one scope: ``ids`` sorted, ``rows`` in that order with
    their ``norms``; ``other`` the sorted ids of the scope's vectors of another length (never
    scored against this length's queries, remembered so that they are not read again)."""

    ids: np.ndarray
    rows: np.ndarray
    norms: np.ndarray
    other: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + self.rows.nbytes + self.norms.nbytes + self.other.nbytes


@dataclass(frozen=True)
class Listing:
    """What a scope (a namespace prefix, no filter) held when its counters read ``generation``
    (``MemoryGeneration``): each (item, vector id) in the search's order (-1: no vector), and the
    item's expiry as a timestamp (inf: none), checked at each search. Expired items not yet swept
    are listed: an expiry passes with no write."""

    generation: int
    items: np.ndarray
    vectors: np.ndarray
    expires: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.items.nbytes + self.vectors.nbytes + self.expires.nbytes


_lock = threading.Lock()
_entries: OrderedDict[Any, Matrix | Listing] = OrderedDict()
_held = [0]  # bytes of the entries


def limit_bytes() -> int:
    return int(settings.MEMORY_VECTOR_CACHE_MB * 1024 * 1024)


def cached(key: Any) -> Matrix | Listing | None:
    with _lock:
        matrix = _entries.get(key)
        if matrix is not None:
            _entries.move_to_end(key)
        return matrix


def keep(key: Any, matrix: Matrix | Listing) -> None:
    """``matrix`` is the scope's copy now; the least recently searched go while over the bound (a
    copy larger than the bound is not kept at all)."""
    with _lock:
        old = _entries.pop(key, None)
        if old is not None:
            _held[0] -= old.nbytes
        if matrix.nbytes > limit_bytes():
            return
        _entries[key] = matrix
        _held[0] += matrix.nbytes
        while _held[0] > limit_bytes():
            _, evicted = _entries.popitem(last=False)
            _held[0] -= evicted.nbytes


def clear() -> None:
    with _lock:
        _entries.clear()
        _held[0] = 0


def held_bytes() -> int:
    return _held[0]
