"""Google ADK's ``BaseMemoryService`` backed by agentstate: long-term memory that erasure reaches.

    memory_service = AgentStateMemoryService("http://localhost:8000", api_key)
    runner = Runner(agent=agent, app_name=app, session_service=..., memory_service=memory_service)

A memory is a memory item of the store (``userdata_app.memory``; LangGraph's ``AgentStateStore``
uses the same table and endpoint, both through ``store_batch``, so no LangGraph is needed), one
item per memory under the namespace ``("users", <user_id>, "adk-memory", <app_name>)`` with the
memory's id as its key: every memory is the user data of its person, so erasure, export, TTLs
and the admin cover it. Ids are mapped as the session service maps them (``identifier_encode``), so
one user id erases both.

As ADK's in-memory service: an event is remembered once (by its id) and only if its content has
text; a memory forgotten with ``delete_memory`` stays forgotten when its session is added again
(the item keeps its id and loses its content); ``search_memory`` finds memories sharing a word with
the query, ranked by the store's search engine, at most ``max_results`` (10). Where it differs is
in docs/CLIENT.md. A memory made from a session's events records the session and the event as its
sources (``add_session_to_memory``, ``add_events_to_memory`` with a ``session_id``): deleting the
session deletes the memories made only from it. ``add_memory``'s have none.

With ``embed`` (what LangGraph's ``IndexConfig["embed"]`` takes: a LangChain ``Embeddings``, a
function of a list of texts, sync or async, or a ``"provider:model"`` string), a memory's text is
embedded here, in the caller's process, and ``search_memory`` ranks by meaning (cosine
similarity, the server's exact search) rather than by shared words.
"""

from __future__ import annotations

import os
import re
import unicodedata
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from agentstate.integrations.adk import API_KEY_ENV, base_url_from_uri, identifier_encode
from agentstate.integrations.store_batch import Embedder, StoreBatch, user_namespace, with_vectors

__all__ = ["AgentStateMemoryService", "memory_namespace"]

LABEL = "adk-memory"  # the namespace label after the user's: ("users", <user_id>, "adk-memory", <app>)
TTL_KEY = "ttl_minutes"  # custom_metadata's key for a memory's time to live
MAX_OPS = 1000  # operations per request (the store's batch limit)
_WORD = re.compile(r"\w+")


def memory_namespace(app_name: str, user_id: str) -> list[str]:
    """Where the memories of ``user_id`` in ``app_name`` are kept (ids encoded as the session
    service's, and "." written "%2E": a namespace label holds none)."""
    return list(user_namespace(identifier_encode(user_id), LABEL, identifier_encode(app_name).replace(".", "%2E")))


def _event_text(event: Event) -> str:
    """What ADK's in-memory service searches: the text parts, joined by spaces."""
    if not event.content or not event.content.parts:
        return ""
    return " ".join(part.text for part in event.content.parts if part.text)


QUERY_WORDS = 64  # the store's query counts its first 64 distinct words, in at most 10,000 characters
QUERY_LENGTH = 10_000


def _query(query: str) -> str:
    """The query's words, in the order written, as the store's query: any of them matches (ADK's
    in-memory service). A long prompt (``preload_memory`` sends the user's whole message) keeps
    its first 64 words, within the store's length."""
    words: list[str] = []
    for word in dict.fromkeys(_WORD.findall(unicodedata.normalize("NFC", query).lower())):
        if len(words) == QUERY_WORDS or sum(map(len, words)) + len(words) + len(word) > QUERY_LENGTH:
            break
        words.append(word)
    return " ".join(words)


class AgentStateMemoryService(BaseMemoryService):
    """ADK memories kept by an agentstate server, as memory items of the person.

    ``AgentStateMemoryService(base_url, api_key)``, or ``AgentStateMemoryService(uri="agentstate://…")``
    with the key from ``AGENTSTATE_API_KEY``, as the session service. ``ttl_minutes``: how long a
    memory lives after its last write or read (None: until deleted or erased); a call's
    ``custom_metadata={"ttl_minutes": ...}`` overrides it."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        uri: str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        max_results: int = 10,
        ttl_minutes: float | None = None,
        embed: Any = None,
        **_registry_kwargs: Any,
    ):
        if uri is not None:
            base_url = base_url_from_uri(uri)
        api_key = api_key or os.environ.get(API_KEY_ENV)
        if not base_url:
            raise ValueError("AgentStateMemoryService needs the server's base_url (or uri=agentstate://host:port).")
        if not api_key:
            raise ValueError(f"AgentStateMemoryService needs an API key (api_key=..., or {API_KEY_ENV}).")
        self.max_results = max_results
        self.ttl_minutes = ttl_minutes
        self._embedder = Embedder(embed) if embed is not None else None
        self._store = StoreBatch(base_url, api_key, timeout=timeout, async_transport=transport)

    async def close(self) -> None:
        await self._store.aclose()

    async def _run(self, ops: list[dict[str, Any]]) -> list[Any]:
        results: list[Any] = []
        for start in range(0, len(ops), MAX_OPS):
            results += await self._store.abatch_raw(ops[start : start + MAX_OPS])
        return results

    def _ttl(self, custom_metadata: Mapping[str, object] | None) -> Any:
        return (custom_metadata or {}).get(TTL_KEY, self.ttl_minutes)

    # --- BaseMemoryService ------------------------------------------------------------------------

    async def add_session_to_memory(self, session: Session) -> None:
        await self.add_events_to_memory(
            app_name=session.app_name, user_id=session.user_id, events=session.events, session_id=session.id
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remembers each event with text not remembered (or forgotten) yet; events are immutable
        in ADK, so an event remembered once is left as it is."""
        namespace, ttl = memory_namespace(app_name, user_id), self._ttl(custom_metadata)
        ops: dict[str, dict[str, Any]] = {}

        def sources(event_id: str) -> list[dict[str, str]]:
            """The session and event a memory was made from (none without a session id): the
            server deletes the memory with its session."""
            if session_id is None:
                return []
            session = {"session_id": identifier_encode(session_id), "app_name": identifier_encode(app_name)}
            return [{**session, "ref": event_id}]

        for event in events:
            text = _event_text(event)
            if not text or event.id in ops:
                continue
            assert event.content is not None  # noqa: S101 (it has text)
            value = {
                "text": text,
                "content": event.content.model_dump(mode="json", exclude_none=True),
                "author": event.author,
                "timestamp": datetime.fromtimestamp(event.timestamp).isoformat(),  # noqa: DTZ006 (ADK's format: local time)
                "session_id": session_id,
            }
            ops[event.id] = {
                "op": "put",
                "namespace": namespace,
                "key": event.id,
                "value": value,
                "ttl": ttl,
                "only_if": "absent",
                "sources": sources(event.id),
            }
        await self._run(await with_vectors(self._embedder, list(ops.values())))

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Stores each entry under its id (a new one if it has none), replacing a memory of the
        same id, a forgotten one included: this is an explicit write."""
        namespace, ttl = memory_namespace(app_name, user_id), self._ttl(custom_metadata)
        ops = []
        for memory in memories:
            value = {
                "text": " ".join(part.text for part in memory.content.parts or () if part.text),
                "content": memory.content.model_dump(mode="json", exclude_none=True),
                "author": memory.author,
                "timestamp": memory.timestamp,
                "custom_metadata": memory.custom_metadata,
            }
            key = memory.id or str(uuid.uuid4())
            ops.append({"op": "put", "namespace": namespace, "key": key, "value": value, "ttl": ttl})
        await self._run(await with_vectors(self._embedder, ops))

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        words = _query(query)
        if not words:
            return SearchMemoryResponse()
        meaning = {} if self._embedder is None else {"vector": await self._embedder.query(query)}
        search = {
            "op": "search",
            "namespace_prefix": memory_namespace(app_name, user_id),
            "query": words,
            **meaning,
            "filter": {"forgotten": {"$ne": True}},  # a forgotten memory's value is {"forgotten": true}
            "limit": self.max_results,
        }
        [items] = await self._run([search])
        return SearchMemoryResponse(memories=list(_entries(items)))

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Forgets the memory: its content is gone at once, its id kept (with the service's TTL,
        erased with the person) so that adding its session again does not bring it back. The
        store's forget is a deletion: under a legal hold it raises ``Held`` and the memory stays."""
        if not memory_id:
            return
        forget = {
            "op": "forget",
            "namespace": memory_namespace(app_name, user_id),
            "key": memory_id,
            "ttl": self.ttl_minutes,
        }
        await self._run([forget])


def _entries(items: Iterable[dict[str, Any]]) -> Iterable[MemoryEntry]:
    for item in items:
        value = item["value"]
        yield MemoryEntry(
            id=item["key"],
            content=types.Content.model_validate(value["content"]),
            author=value.get("author"),
            timestamp=value.get("timestamp"),
            custom_metadata=value.get("custom_metadata") or {},
        )
