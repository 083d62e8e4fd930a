"""The clients' sockets: HTTP/1.1 for the blocking client, asyncio's streams for the async one.

httpx's blocking transport runs each request through httpcore's pool and h11's state machine,
about half of what a small call costs its caller; ``BlockingTransport`` writes the request and
reads the answer itself (a status line, headers, a body of ``Content-Length`` bytes or in chunks)
on kept-alive sockets, and raises httpx's exceptions as httpx's own transport does (a timeout, a
refused, dropped or reset connection, a TLS failure), so the client's retries see what they saw.

httpx's async transport reaches its sockets through AnyIO, which opens a cancel scope, a timeout
scope and a checkpoint around every read and write: most of what an async call costs its caller
beyond a blocking one. ``AsyncioBackend`` does the same I/O on asyncio's streams, with asyncio's
timeouts, and raises httpcore's exceptions as AnyIO's backend maps them.
"""

from __future__ import annotations

import asyncio
import select
import socket
import ssl
import threading
from typing import Any

import httpcore
import httpx

MAX_LINE = 65536  # a status or header line longer than this is refused, as h11 refuses it
MAX_HEADERS = 100
IDLE_PER_ORIGIN = 10  # kept-alive connections kept per server; more are closed when answered


class _Connection:
    """One kept-alive connection: its socket and a buffered reader of it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")

    def closed_while_idle(self) -> bool:
        """An idle connection has nothing to read: readable, the server closed it (or broke the protocol)."""
        return self.sock.fileno() == -1 or bool(select.select([self.sock], [], [], 0)[0])

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def _line(reader: Any, request: httpx.Request) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise httpx.RemoteProtocolError("A line of the answer is longer than 64 KiB.", request=request)
    return line


def _head(reader: Any, request: httpx.Request) -> tuple[bytes, int, bytes, list[tuple[bytes, bytes]]]:
    """The answer's version, status, reason and headers, past any interim (1xx) answer."""
    while True:
        status_line = _line(reader, request)
        if not status_line:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        try:
            version, status_text, *reason = status_line.split(None, 2)
            status = int(status_text)
        except ValueError:
            raise httpx.RemoteProtocolError(f"Not an HTTP status line: {status_line[:80]!r}", request=request) from None
        if not version.startswith(b"HTTP/1."):
            raise httpx.RemoteProtocolError(f"Not an HTTP/1.x answer: {status_line[:80]!r}", request=request)
        headers: list[tuple[bytes, bytes]] = []
        while (line := _line(reader, request)) not in (b"\r\n", b"\n"):
            name, colon, value = line.partition(b":")
            if not colon or not line.endswith(b"\n") or len(headers) == MAX_HEADERS:
                raise httpx.RemoteProtocolError("The answer's headers are malformed or cut short.", request=request)
            headers.append((name.strip(), value.strip()))
        if not 100 <= status < 200:
            return version, status, reason[0].strip() if reason else b"", headers


def _chunked(reader: Any, request: httpx.Request) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = _line(reader, request)
        try:
            size = int(size_line.split(b";", 1)[0], 16)
        except ValueError:
            raise httpx.RemoteProtocolError("A chunk of the answer has no valid size.", request=request) from None
        if size == 0:
            while _line(reader, request) not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return b"".join(parts)
        parts.append(_exactly(reader, size, request))
        _line(reader, request)


def _exactly(reader: Any, size: int, request: httpx.Request) -> bytes:
    data = reader.read(size)
    if len(data) < size:
        raise httpx.RemoteProtocolError("Server disconnected before the end of the answer.", request=request)
    return data


def _response(conn: _Connection, request: httpx.Request) -> tuple[httpx.Response, bool]:
    """The answer to ``request`` read from ``conn``, and whether the connection may serve another."""
    version, status, reason, headers = _head(conn.reader, request)
    fields = {name.lower(): value.lower() for name, value in headers}
    tokens = {t.strip() for t in fields.get(b"connection", b"").split(b",")}
    keep = b"close" not in tokens and (version == b"HTTP/1.1" or b"keep-alive" in tokens)
    if request.method == "HEAD" or status in (204, 304):
        content = b""
    elif b"chunked" in fields.get(b"transfer-encoding", b""):
        content = _chunked(conn.reader, request)
    elif b"content-length" in fields:
        try:
            length = int(fields[b"content-length"])
        except ValueError:
            raise httpx.RemoteProtocolError("The answer's Content-Length is not a number.", request=request) from None
        content = _exactly(conn.reader, length, request)
    else:  # the answer ends where the connection does
        content, keep = conn.reader.read(), False
    extensions = {"http_version": version, "reason_phrase": reason}
    return httpx.Response(status, headers=headers, stream=httpx.ByteStream(content), extensions=extensions), keep


class BlockingTransport(httpx.BaseTransport):
    """HTTP/1.1 on kept-alive connections (one per thread in flight, up to ``IDLE_PER_ORIGIN`` kept
    idle per server), TLS verified against ``verify``; httpx's timeouts (connect, write, read) and
    exceptions. An idle connection the server closed is not reused."""

    def __init__(self, verify: ssl.SSLContext) -> None:
        self._tls = verify
        self._lock = threading.Lock()
        self._idle: dict[tuple[bytes, bytes, int], list[_Connection]] = {}
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        origin = (url.raw_scheme, url.raw_host, url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        conn = self._idle_connection(origin) or self._connect(origin, timeouts.get("connect"), request)
        try:
            self._send(conn, request, timeouts.get("write"))
            conn.sock.settimeout(timeouts.get("read"))
            try:
                response, keep = _response(conn, request)
            except TimeoutError:
                raise httpx.ReadTimeout("The server did not answer in time.", request=request) from None
            except OSError as exc:
                raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
        except BaseException:
            conn.close()
            raise
        self._release(origin, conn, keep)
        return response

    def _idle_connection(self, origin: tuple[bytes, bytes, int]) -> _Connection | None:
        with self._lock:
            idle = self._idle.get(origin, [])
            while idle:
                conn = idle.pop()
                if not conn.closed_while_idle():
                    return conn
                conn.close()
        return None

    def _connect(self, origin: tuple[bytes, bytes, int], timeout: float | None, request: httpx.Request) -> _Connection:
        scheme, host, port = origin
        try:
            sock = socket.create_connection((host.decode("ascii"), port), timeout=timeout)
        except TimeoutError:
            raise httpx.ConnectTimeout("Connecting to the server timed out.", request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if scheme == b"https":
                sock = self._tls.wrap_socket(sock, server_hostname=host.decode("ascii"))
        except TimeoutError:
            sock.close()
            raise httpx.ConnectTimeout("The TLS handshake timed out.", request=request) from None
        except OSError as exc:  # ssl.SSLError is one
            sock.close()
            raise httpx.ConnectError(str(exc), request=request) from exc
        return _Connection(sock)

    @staticmethod
    def _send(conn: _Connection, request: httpx.Request, timeout: float | None) -> None:
        body = request.read()
        if request.headers.get("Transfer-Encoding", "").lower() == "chunked":  # a body given as an iterator
            body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
        head = b"".join(name + b": " + value + b"\r\n" for name, value in request.headers.raw)
        conn.sock.settimeout(timeout)
        try:
            conn.sock.sendall(
                b"%s %s HTTP/1.1\r\n%s\r\n%s" % (request.method.encode("ascii"), request.url.raw_path, head, body)
            )
        except TimeoutError:
            raise httpx.WriteTimeout("Sending the request timed out.", request=request) from None
        except OSError as exc:
            raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc

    def _release(self, origin: tuple[bytes, bytes, int], conn: _Connection, keep: bool) -> None:
        with self._lock:
            idle = self._idle.setdefault(origin, [])
            if keep and not self._closed and len(idle) < IDLE_PER_ORIGIN:
                idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = [c for conns in self._idle.values() for c in conns], {}
        for conn in idle:
            conn.close()


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
