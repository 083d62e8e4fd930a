"""The agentstate clients a framework integration sends its calls through, shared by LangGraph's
saver and store: each made on first use, the async one again for each event loop (httpx's pool
belongs to one loop) and closed with its loop (``LoopClients``), all closed with the integration
or its ``with`` block."""

from __future__ import annotations

from typing import Any, Self

import httpx

from agentstate.client.calls import Call
from agentstate.client.clients import AgentStateClient, AsyncAgentStateClient
from agentstate.client.loops import LoopClients


class ClientTransport:
    """A base for integrations: ``_transport_setup`` in ``__init__``, then ``_run`` and ``_arun``
    send a call; ``close``/``aclose`` (or ``with``/``async with``) release the connections."""

    base_url: str

    def _transport_setup(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        retries: int,
        transport: httpx.BaseTransport | None,
        async_transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        self.base_url = base_url
        self._api_key = api_key
        self._options: dict[str, Any] = {"timeout": timeout, "retries": retries}
        self._sync_transport = transport
        self._sync: AgentStateClient | None = None
        self._async = LoopClients(
            lambda: AsyncAgentStateClient(self.base_url, self._api_key, transport=async_transport, **self._options)
        )

    def _run(self, call: Call[Any]) -> Any:
        if self._sync is None:
            self._sync = AgentStateClient(self.base_url, self._api_key, transport=self._sync_transport, **self._options)
        return self._sync._call(call)

    async def _arun(self, call: Call[Any]) -> Any:
        return await self._async.get()._call(call)

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    async def aclose(self) -> None:
        self.close()
        await self._async.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
