"""``AgentStateStore``: LangGraph's long-term memory interface (``BaseStore``) on agentstate.

Compile a graph with it and its nodes read and write memories through ``runtime.store``::

    graph = builder.compile(checkpointer=saver, store=AgentStateStore(url, api_key))

Every item belongs to a person: a stored item's namespace must start with ``("users", user_id)``
(``user_namespace`` builds it, writing the id's "%" and "." as "%25" and "%2E"), so erasing or
exporting that person reaches it; a put under any other namespace is refused
(``agentstate.client.ValidationError``). Namespaces written otherwise take the store's ``owner``
rule, set once: the position of the user id's label (``AgentStateStore(url, key, owner=1)`` for
``("memories", user_id)``, ``owner=0`` for ``(user_id, "prefs")``) or a callable of the namespace
returning the user id; the server reads the person at that position and refuses a put naming none.
Each ``batch`` call is one request, run in one transaction; as in LangGraph's own stores, its
reads see the data before its writes.
``search`` takes LangGraph's filters (equality, nested objects, ``$eq``, ``$ne``, ``$gt``,
``$gte``, ``$lt``, ``$lte``) and returns the most recently updated items first, ``score`` None.
With ``query`` it is a full-text search until semantic ranking exists (a later step): the items
whose value's strings hold any of the query's words (whole, any case, no stemming), best first
with ``score`` set, filter, limit and offset applied to them. TTLs are in minutes, refreshed on
read unless ``ttl={"refresh_on_read": False}`` or ``refresh_ttl=False`` says otherwise
(docs/CLIENT.md).

A memory that comes from a conversation can record it: with ``record_thread=True`` a put inside a
graph run (a node's ``store.put(namespace, key, value)``) records the run's thread
(``config["configurable"]["thread_id"]``) as the item's source, and deleting that thread on the
server deletes the items made only from it::

    store = AgentStateStore(url, api_key, record_thread=True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import httpx
from langgraph.config import get_config
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from agentstate.integrations.store_batch import StoreBatch, user_namespace

__all__ = ["AgentStateStore", "user_namespace"]


def _run_thread() -> str | None:
    """The thread of the graph run this call is made in, if any."""
    try:
        thread_id = get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # not inside a run
        return None
    return None if thread_id is None else str(thread_id)


Owner = int | Callable[[tuple[str, ...]], "str | None"]


def _owner_position(owner: Owner, namespace: tuple[str, ...]) -> int:
    """The position of the label naming the item's person, by the store's rule."""
    if isinstance(owner, int):
        return owner
    user_id = owner(namespace)
    label = None if user_id is None else user_namespace(user_id)[1]
    if label not in namespace:
        raise ValueError(f"The store's owner rule finds no person in the namespace {namespace!r}.")
    return namespace.index(label)


def _op_data(op: Op, *, record_thread: bool = False, owner: Owner | None = None) -> dict[str, Any]:
    validate_op_namespace(op)  # a label with "." or NUL, or empty: LangGraph's InvalidNamespaceError
    if isinstance(op, GetOp):
        return {"op": "get", "namespace": list(op.namespace), "key": op.key, "refresh_ttl": op.refresh_ttl}
    if isinstance(op, PutOp):
        value = None if op.value is None else dict(op.value)
        data = {"op": "put", "namespace": list(op.namespace), "key": op.key, "value": value, "ttl": op.ttl}
        if owner is not None and value is not None:
            data["owner"] = _owner_position(owner, op.namespace)
        thread_id = _run_thread() if record_thread and value is not None else None
        return data if thread_id is None else {**data, "sources": [{"thread_id": thread_id}]}
    if isinstance(op, SearchOp):
        return {
            "op": "search",
            "namespace_prefix": list(op.namespace_prefix),
            "filter": op.filter,
            "limit": op.limit,
            "offset": op.offset,
            "query": op.query,
            "refresh_ttl": op.refresh_ttl,
        }
    if isinstance(op, ListNamespacesOp):
        paths: dict[str, list[str]] = {}
        for condition in op.match_conditions or ():
            if condition.match_type in paths:
                raise ValueError(f"list_namespaces takes one {condition.match_type} condition, not several.")
            paths[condition.match_type] = list(condition.path)
        return {"op": "list_namespaces", **paths, "max_depth": op.max_depth, "limit": op.limit, "offset": op.offset}
    raise ValueError(f"Unknown operation type: {type(op)}")


class _Index:
    """The caller's ``IndexConfig``, as LangGraph's ``InMemoryStore`` reads it: the embedder runs
    here, in the caller's process; a put sends one vector per field path (a ``[*]`` path one per
    element, ``path.0``, ``path.1``, ...), a search with a query the query's vector."""

    def __init__(self, config: IndexConfig) -> None:
        self.embeddings = ensure_embeddings(config.get("embed"))
        self.fields = [(p, p if p == "$" else tokenize_path(p)) for p in (config.get("fields") or ["$"])]

    def texts(self, ops: list[Op]) -> list[tuple[int, str, str]]:
        """(op's position, field path, text) of every text a batch's puts index."""
        found = []
        for i, op in enumerate(ops):
            if not isinstance(op, PutOp) or op.value is None or op.index is False:
                continue
            paths = self.fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
            for path, tokens in paths:
                texts = get_text_at_path(op.value, tokens)
                named = [(f"{path}.{j}", text) for j, text in enumerate(texts)] if len(texts) > 1 else []
                found += [(i, name, text) for name, text in named or [(path, t) for t in texts]]
        return found

    def queries(self, ops: list[Op]) -> list[str]:
        return sorted({op.query for op in ops if isinstance(op, SearchOp) and op.query})

    def attach(self, ops: list[Op], data: list[dict[str, Any]], texts, vectors, queries, query_vectors) -> None:
        for (i, path, _), vector in zip(texts, vectors, strict=True):
            data[i].setdefault("vectors", []).append({"path": path, "vector": [float(x) for x in vector]})
        by_query = dict(zip(queries, query_vectors, strict=True))
        for op, sent in zip(ops, data, strict=True):
            if isinstance(op, PutOp) and op.value is not None:
                sent.setdefault("vectors", [])  # a put the index leaves out keeps no vector
            if isinstance(op, SearchOp) and op.query:
                sent["vector"] = [float(x) for x in by_query[op.query]]


def _result(op: Op, data: Any) -> Result:
    if isinstance(op, GetOp):
        return None if data is None else Item(**data)
    if isinstance(op, SearchOp):
        return [SearchItem(**item) for item in data]
    if isinstance(op, ListNamespacesOp):
        return [tuple(namespace) for namespace in data]
    return None


class AgentStateStore(StoreBatch, BaseStore):
    """LangGraph store on an agentstate server; ``ttl`` is LangGraph's ``TTLConfig`` (a default
    TTL in minutes, whether reads refresh it); ``record_thread``: a put inside a graph run records
    the run's thread as the item's source; ``owner``: where a namespace names its person (above)."""

    supports_ttl = True

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        ttl: TTLConfig | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        record_thread: bool = False,
        owner: Owner | None = None,
        index: IndexConfig | None = None,
    ) -> None:
        super().__init__(
            base_url, api_key, timeout=timeout, retries=retries, transport=transport, async_transport=async_transport
        )
        self.ttl_config = ttl
        self.record_thread = record_thread
        self.owner = owner
        self.index_config = index
        self._index = _Index(index) if index else None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if not ops:
            return []
        data = [_op_data(op, record_thread=self.record_thread, owner=self.owner) for op in ops]
        if self._index is not None:
            texts, queries = self._index.texts(ops), self._index.queries(ops)
            embed = self._index.embeddings
            vectors = embed.embed_documents([text for *_, text in texts]) if texts else []
            query_vectors = [embed.embed_query(query) for query in queries]
            self._index.attach(ops, data, texts, vectors, queries, query_vectors)
        results = self.batch_raw(data)
        return [_result(op, data) for op, data in zip(ops, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if not ops:
            return []
        data = [_op_data(op, record_thread=self.record_thread, owner=self.owner) for op in ops]
        if self._index is not None:
            texts, queries = self._index.texts(ops), self._index.queries(ops)
            embed = self._index.embeddings
            vectors = await embed.aembed_documents([text for *_, text in texts]) if texts else []
            query_vectors = [await embed.aembed_query(query) for query in queries]
            self._index.attach(ops, data, texts, vectors, queries, query_vectors)
        results = await self.abatch_raw(data)
        return [_result(op, data) for op, data in zip(ops, results, strict=True)]
