"""The async client's sockets on asyncio's own streams (an httpcore network backend).

httpx's async transport reaches its sockets through AnyIO, which opens a cancel scope, a timeout
scope and a checkpoint around every read and write: most of what an async call costs its caller
beyond a blocking one. This backend does the same I/O on asyncio's streams, with asyncio's timeouts,
and raises httpcore's exceptions as AnyIO's backend maps them (a timeout, a refused or reset
connection, a TLS failure), so httpx and the client's retries see what they saw before.
"""

from __future__ import annotations

import asyncio
import select
import ssl
from typing import Any

import httpcore


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109 (httpcore's interface)
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)  # b"" at the end of the stream
        except TimeoutError:
            raise httpcore.ReadTimeout() from None
        except OSError as exc:
            raise httpcore.ReadError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109 (httpcore's interface)
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()
        except TimeoutError:
            raise httpcore.WriteTimeout() from None
        except OSError as exc:
            raise httpcore.WriteError(exc) from exc

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError:
            self._writer.close()
            raise httpcore.ConnectTimeout() from None
        except (OSError, ssl.SSLError) as exc:
            self._writer.close()
            raise httpcore.ConnectError(exc) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "is_readable":  # an idle kept-alive connection the server closed: not reused
            sock = self._writer.get_extra_info("socket")
            return sock is None or sock.fileno() == -1 or bool(select.select([sock], [], [], 0)[0])
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """TCP connections as asyncio streams (TCP_NODELAY, as asyncio sets it); no Unix sockets."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        local = None if local_address is None else (local_address, 0)
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        except TimeoutError:
            raise httpcore.ConnectTimeout() from None
        except OSError as exc:
            raise httpcore.ConnectError(exc) from exc
        for option in socket_options or ():
            writer.get_extra_info("socket").setsockopt(*option)
        return _Stream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def asyncio_transport(verify: ssl.SSLContext) -> Any:
    """httpx's async transport (its pool, TLS with ``verify``, limits and error mapping) on
    ``AsyncioBackend``."""
    import httpx

    transport = httpx.AsyncHTTPTransport(verify=verify)
    transport._pool._network_backend = AsyncioBackend()  # httpcore's pool takes one; httpx passes none
    return transport
