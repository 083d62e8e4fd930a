"""The memory store's batch endpoint without a framework: LangGraph's ``AgentStateStore`` and ADK's
``AgentStateMemoryService`` both send through it, so the ``[adk]`` extra needs no LangGraph."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Any

import httpx

from agentstate.client.calls import API, Call, as_json
from agentstate.integrations.transport import ClientTransport

__all__ = ["Embedder", "StoreBatch", "user_namespace", "with_vectors"]

BATCH_URL = f"{API}/store/batch/"


def user_namespace(user_id: str, *labels: str) -> tuple[str, ...]:
    """The namespace of ``user_id``'s items: ``("users", user_id, *labels)``, the user id's "%"
    and "." written "%25" and "%2E" (a namespace label holds no ".", a user id may: an e-mail)."""
    return ("users", user_id.replace("%", "%25").replace(".", "%2E"), *labels)


class StoreBatch(ClientTransport):
    """Batches of store operations as the endpoint takes them (JSON objects), one request and one
    transaction each."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._transport_setup(
            base_url, api_key, timeout=timeout, retries=retries, transport=transport, async_transport=async_transport
        )

    @staticmethod
    def _call(ops: list[dict[str, Any]], user_id: str | None = None) -> Call[Any]:
        # Retried safely: a batch's puts set values (the same again changes nothing but times).
        body: dict[str, Any] = {"ops": ops} if user_id is None else {"ops": ops, "user_id": user_id}
        return Call("POST", BATCH_URL, as_json, json=body, idempotent=True)

    def batch_raw(self, ops: list[dict[str, Any]], user_id: str | None = None) -> list[Any]:
        """The batch endpoint's results for operations as it takes them (the ADK memory service's
        conditional puts, which LangGraph's ops cannot say). ``user_id``: every operation is that
        person's (the server refuses one that is not), and the access log names them."""
        return self._run(self._call(ops, user_id))["results"]

    async def abatch_raw(self, ops: list[dict[str, Any]], user_id: str | None = None) -> list[Any]:
        """``batch_raw``, awaited."""
        return (await self._arun(self._call(ops, user_id)))["results"]


class Embedder:
    """An ``embed`` as LangGraph's ``ensure_embeddings`` reads it, without needing LangGraph for
    the plain and async functions: texts in, one vector each out (ADK's memory service and the MCP
    server embed through it)."""

    def __init__(self, embed: Any, dims: int | None = None) -> None:
        if isinstance(embed, str):
            from langgraph.store.base import ensure_embeddings  # a provider string needs LangChain's init

            embed = ensure_embeddings(embed)
        self._embed = embed
        self._dims = dims  # when given, a vector of another length is the embedder's error, not sent

    async def documents(self, texts: list[str]) -> list[list[float]]:
        embed = self._embed
        if hasattr(embed, "aembed_documents"):
            vectors = await embed.aembed_documents(texts)
        else:
            found: list[list[float]] | Awaitable[list[list[float]]] = embed(texts)
            vectors = await found if inspect.isawaitable(found) else found
        return [self._sized([float(x) for x in vector]) for vector in vectors]

    async def query(self, text: str) -> list[float]:
        if hasattr(self._embed, "aembed_query"):
            return self._sized([float(x) for x in await self._embed.aembed_query(text)])
        return (await self.documents([text]))[0]

    def _sized(self, vector: list[float]) -> list[float]:
        if self._dims is not None and len(vector) != self._dims:
            raise ValueError(f"the embedder gave a vector of {len(vector)} numbers, not the {self._dims} of dims")
        return vector


async def with_vectors(embedder: Embedder | None, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The puts with their value's ``text`` embedded (one vector, at the path "text")."""
    if embedder is None or not ops:
        return ops
    vectors = await embedder.documents([op["value"]["text"] for op in ops])
    return [{**op, "vectors": [{"path": "text", "vector": vector}]} for op, vector in zip(ops, vectors, strict=True)]
