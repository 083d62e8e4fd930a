"""Memories' search: the entry point every memory interface shares, which the memory app registers
(the platform imports no app)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentstate.tenancy.models import Tenant


@dataclass(frozen=True)
class MemoryHit:
    item: Any  # the memory item (the memory app's MemoryItem)
    score: float  # text_search_any's: higher is better, comparable only within one search


_memory_search: Callable[..., list[MemoryHit]] | None = None


def memory_search_register(search: Callable[..., list[MemoryHit]]) -> None:
    """The memory app gives its search at start (``AppConfig.ready``): the platform imports no app."""
    global _memory_search
    _memory_search = search


def search_memories(
    tenant: Tenant,
    user_id: str | None,
    query: str,
    namespace_prefix: list[str] | tuple[str, ...] | None = None,
    filter: dict[str, Any] | None = None,
    limit: int = 10,
    offset: int = 0,
) -> list[MemoryHit]:
    """The live memory items of ``user_id`` (None: of every user of the tenant) under
    ``namespace_prefix`` whose value's strings hold ANY of the query's words, best first
    (``text_search_any``: more words, then rarer ones, then the most recently updated), LangGraph's
    ``filter`` applied; a 400 (field ``q``) when the query holds no word."""
    if _memory_search is None:
        raise RuntimeError("No memory search is registered: the memory app is not installed.")
    return _memory_search(
        tenant=tenant,
        user_id=user_id,
        query=query,
        namespace_prefix=list(namespace_prefix or ()),
        filter=filter,
        limit=limit,
        offset=offset,
    )
