"""One async HTTP client per event loop, closed with its loop.

httpx's connection pool belongs to the loop that opened it, so an adapter called from several
loops (``asyncio.run`` per script step or per test, ADK's and the SDK's runners) needs a client per
loop. Each is closed when its loop shuts down: the loop's ``shutdown_asyncgens()``, which
``asyncio.run``, ``asyncio.Runner``, pytest-asyncio and anyio call before closing it, closes a
suspended async generator kept beside the client, and its ``finally`` closes the client while the
loop can still run the close. So a program that runs a thousand loops holds the clients of the
loops still open, not a pool and its connections per loop it ever ran.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Generic, Protocol, TypeVar


class AsyncCloseable(Protocol):
    async def aclose(self) -> None: ...


C = TypeVar("C", bound=AsyncCloseable)


class LoopClients(Generic[C]):
    """The clients of one adapter, one per running event loop, made by ``make`` on first use."""

    def __init__(self, make: Callable[[], C]) -> None:
        self._make = make
        self._clients: dict[asyncio.AbstractEventLoop, tuple[C, AsyncGenerator[None, None]]] = {}
        self._lock = threading.Lock()  # loops may run in several threads (ADK's runners)

    def get(self) -> C:
        """The running loop's client."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is None:
            client = self._make()
            closer = self._closer(loop, client)
            # Started in the running loop, the generator is one the loop closes at its shutdown.
            try:
                closer.asend(None).send(None)
            except StopIteration:
                pass
            with self._lock:
                # A loop closed without shutting down its generators (loop.close() alone) cannot
                # run its client's close any more: the client is dropped, and the garbage
                # collector closes its sockets.
                for closed in [other for other in self._clients if other.is_closed()]:
                    del self._clients[closed]
                entry = self._clients[loop] = (client, closer)
        return entry[0]

    async def _closer(self, loop: asyncio.AbstractEventLoop, client: C) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._lock:
                if self._clients.get(loop, (None,))[0] is client:
                    del self._clients[loop]
            await client.aclose()

    async def aclose(self) -> None:
        """Close the running loop's client (a later call makes a new one)."""
        with self._lock:
            entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[1].aclose()

    def close_all(self) -> None:
        """Close every open loop's client, from code outside those loops: a loop that is running
        (in another thread, or the caller's own) closes it as its next step."""
        with self._lock:
            entries, self._clients = list(self._clients.items()), {}
        for loop, (_, closer) in entries:
            if loop.is_closed():
                continue
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(closer.aclose(), loop)
            else:
                loop.run_until_complete(closer.aclose())
