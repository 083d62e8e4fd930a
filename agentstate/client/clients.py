"""The two transports: ``AgentStateClient`` (sync, httpx.Client) and ``AsyncAgentStateClient``.

They only move bytes and sleep between retries; the endpoints, retry rules and error mapping are
shared (``endpoints``, ``calls``, ``errors``).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from agentstate.client.calls import Call
from agentstate.client.endpoints import Endpoints
from agentstate.client.models import Page
from agentstate.client.network import AsyncioTransport, BlockingTransport
from agentstate.client.tracing import async_request_hooks, request_hooks

USER_AGENT = "agentstate-client/0.1"


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context a process, as httpx makes one (certifi's authorities, or SSL_CERT_FILE's):
    each new client (one per event loop) read and parsed every authority again, which cost more CPU
    than a small call."""
    return httpx.create_ssl_context()


def blocking_transport() -> httpx.BaseTransport:
    """What a blocking client sends through when it is given no transport."""
    return BlockingTransport(_tls_context())


def async_transport() -> httpx.AsyncBaseTransport:
    """What an async client (and ADK's services) sends through when given none; one per event loop."""
    return AsyncioTransport(_tls_context())


def http_options(base_url: str, api_key: str, timeout: float, event_hooks: dict[str, Any]) -> dict[str, Any]:
    """The options of an httpx client of agentstate's: these clients' and the ADK session service's."""
    return {
        "base_url": base_url,
        "verify": _tls_context(),
        "timeout": timeout,
        "headers": {"X-Api-Key": api_key, "Accept": "application/json", "User-Agent": USER_AGENT},
        "event_hooks": event_hooks,  # the caller's trace context (agentstate.client.tracing)
    }


class _NoCookies(httpx.Cookies):
    """A jar that keeps nothing: the service knows a caller by its API key, never by a cookie, and
    httpx looked for cookies in every answer's headers (a sixth of a small call's time)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class _KeepsNoCookies:
    @property
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        raise TypeError("agentstate's clients keep no cookies")


class _Client(_KeepsNoCookies, httpx.Client):
    pass


class _AsyncClient(_KeepsNoCookies, httpx.AsyncClient):
    pass


_NO_COOKIES = _NoCookies()


def _base_url_of(http: httpx.Client | httpx.AsyncClient) -> str:
    return str(http.base_url).rstrip("/") + "/"  # httpx prints a bare host without its "/"


class AgentStateClient(Endpoints):
    """Blocking client. Use as a context manager, or call ``close()``.

    ``retries`` is how many more times a request that failed to connect (or, when it is safe to
    repeat, failed in any transport way) is tried, after 0.2 s, 0.4 s, ...; ``timeout`` is in seconds.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        transport: httpx.BaseTransport | None = None,
    ):
        self.retries = retries
        self._http = _Client(
            transport=transport or blocking_transport(),
            **http_options(base_url, api_key, timeout, request_hooks()),
        )
        self._base_url = _base_url_of(self._http)

    def _call(self, call: Call[Any]) -> Any:
        for attempt in call.attempts(self.retries):
            if attempt.delay:
                time.sleep(attempt.delay)
            with attempt:
                return call.result(self._http.request(**call.request_on(self._base_url)))

    def _iterate(self, call: Call[Page[Any]] | None) -> Iterator[Any]:
        while call is not None:
            page = self._call(call)
            yield from page.results
            call = call.with_cursor(page.next_cursor) if page.next_cursor else None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AgentStateClient:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


# How code that awaits an AsyncAgentStateClient's methods holds one: Endpoints declares each
# method's blocking result and this client returns an awaitable of it, which Python's types cannot
# derive from one declaration, so such callers see Any rather than a wrong type.
AsyncEndpoints = Any


class AsyncAgentStateClient(Endpoints):
    """Asyncio client: the same methods as ``AgentStateClient``, awaited (``*_iter`` give async iterators).

    Use as an async context manager, or await ``aclose()``.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        self.retries = retries
        self._http = _AsyncClient(
            transport=transport or async_transport(),
            **http_options(base_url, api_key, timeout, async_request_hooks()),
        )
        self._base_url = _base_url_of(self._http)

    async def _call(self, call: Call[Any]) -> Any:
        for attempt in call.attempts(self.retries):
            if attempt.delay:
                await asyncio.sleep(attempt.delay)
            with attempt:
                return call.result(await self._http.request(**call.request_on(self._base_url)))

    async def _iterate(self, call: Call[Page[Any]] | None) -> AsyncIterator[Any]:
        while call is not None:
            page = await self._call(call)
            for item in page.results:
                yield item
            call = call.with_cursor(page.next_cursor) if page.next_cursor else None

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncAgentStateClient:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
