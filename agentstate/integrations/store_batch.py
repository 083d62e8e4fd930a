"""The memory store's batch endpoint without a framework: LangGraph's ``AgentStateStore`` and ADK's
``AgentStateMemoryService`` both send through it, so the ``[adk]`` extra needs no LangGraph."""

from __future__ import annotations

from typing import Any

import httpx

from agentstate.client.calls import API, Call, as_json
from agentstate.integrations.transport import ClientTransport

__all__ = ["StoreBatch", "user_namespace"]

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
    def _call(ops: list[dict[str, Any]]) -> Call[Any]:
        # Retried safely: a batch's puts set values (the same again changes nothing but times).
        return Call("POST", BATCH_URL, as_json, json={"ops": ops}, idempotent=True)

    def batch_raw(self, ops: list[dict[str, Any]]) -> list[Any]:
        """The batch endpoint's results for operations as it takes them (the ADK memory service's
        conditional puts, which LangGraph's ops cannot say)."""
        return self._run(self._call(ops))["results"]

    async def abatch_raw(self, ops: list[dict[str, Any]]) -> list[Any]:
        """``batch_raw``, awaited."""
        return (await self._arun(self._call(ops)))["results"]
