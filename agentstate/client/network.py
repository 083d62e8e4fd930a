"""The clients' HTTP/1.1: on sockets for the blocking client, on asyncio's streams for the async one.

httpx's transports run each request through httpcore's pool and h11's state machine (and, async,
AnyIO's cancel and timeout scopes around every read and write): about half of what a small call
costs its caller. These transports write the request and read the answer themselves (a status
line, headers, a body of ``Content-Length`` bytes, in chunks, or to the end of the connection) on
kept-alive connections, and raise httpx's exceptions as httpx's transports do (a timeout; a refused,
dropped or reset connection; a TLS failure; an answer that breaks the protocol), so the clients'
retries see what they saw. The answer's reading is written once (``_answer``, which asks for its
reads) and driven by each transport's own I/O.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import threading
from collections.abc import Generator, Iterator
from typing import Any

import httpx

MAX_LINE = 65536  # a status or header line longer than this is refused, as h11 refuses it
MAX_HEADERS = 100
IDLE_PER_ORIGIN = 10  # kept-alive connections kept per server; more are closed when answered

Origin = tuple[bytes, bytes, int]
LINE, EXACTLY, REST = "line", "exactly", "rest"  # the reads ``_answer`` asks for
Answer = Generator[tuple[str, int], bytes, tuple[httpx.Response, bool]]


def _refused(what: str, request: httpx.Request) -> httpx.RemoteProtocolError:
    return httpx.RemoteProtocolError(what, request=request)


@contextlib.contextmanager
def _failing_as(
    request: httpx.Request, timed_out: type[httpx.TimeoutException], failed: type[httpx.TransportError], said: str
) -> Iterator[None]:
    """A socket's timeout and errors within as httpx's transports raise them: ``timed_out`` saying
    ``said``, or ``failed`` with the error's text (ssl.SSLError is an OSError)."""
    try:
        yield
    except TimeoutError:
        raise timed_out(said, request=request) from None
    except OSError as exc:
        raise failed(str(exc) or type(exc).__name__, request=request) from exc


def _sending(request: httpx.Request) -> contextlib.AbstractContextManager[None]:
    return _failing_as(request, httpx.WriteTimeout, httpx.WriteError, "Sending the request timed out.")


def _reading(request: httpx.Request) -> contextlib.AbstractContextManager[None]:
    return _failing_as(request, httpx.ReadTimeout, httpx.ReadError, "The server did not answer in time.")


def _connecting(
    request: httpx.Request, said: str = "Connecting to the server timed out."
) -> contextlib.AbstractContextManager[None]:
    return _failing_as(request, httpx.ConnectTimeout, httpx.ConnectError, said)


def _too_long(request: httpx.Request) -> httpx.RemoteProtocolError:
    return _refused("A line of the answer is longer than 64 KiB.", request)


def _line(data: bytes, request: httpx.Request) -> bytes:
    if len(data) > MAX_LINE:
        raise _too_long(request)
    return data


def _exactly(data: bytes, size: int, request: httpx.Request) -> bytes:
    if len(data) < size:
        raise _refused("Server disconnected before the end of the answer.", request)
    return data


def _answer(request: httpx.Request) -> Answer:
    """Reads the answer to ``request``: yields each read it needs (a line, exactly n bytes, the rest
    of the connection) and is sent what was read; returns the response and whether the connection
    may serve another request."""
    while True:  # past any interim (1xx) answer
        status_line = _line((yield LINE, 0), request)
        if not status_line:
            raise _refused("Server disconnected without sending a response.", request)
        try:
            version, status_text, *reason = status_line.split(None, 2)
            status = int(status_text)
        except ValueError:
            raise _refused(f"Not an HTTP status line: {status_line[:80]!r}", request) from None
        if not version.startswith(b"HTTP/1."):
            raise _refused(f"Not an HTTP/1.x answer: {status_line[:80]!r}", request)
        headers: list[tuple[bytes, bytes]] = []
        while (line := _line((yield LINE, 0), request)) not in (b"\r\n", b"\n"):
            name, colon, value = line.partition(b":")
            if not colon or not line.endswith(b"\n") or len(headers) == MAX_HEADERS:
                raise _refused("The answer's headers are malformed or cut short.", request)
            headers.append((name.strip(), value.strip()))
        if not 100 <= status < 200:
            break
    fields = {name.lower(): value.lower() for name, value in headers}
    tokens = {t.strip() for t in fields.get(b"connection", b"").split(b",")}
    keep = b"close" not in tokens and (version == b"HTTP/1.1" or b"keep-alive" in tokens)
    if request.method == "HEAD" or status in (204, 304):
        content = b""
    elif b"chunked" in fields.get(b"transfer-encoding", b""):
        parts = []
        while size := _chunk_size(_line((yield LINE, 0), request), request):
            parts.append(_exactly((yield EXACTLY, size), size, request))
            _line((yield LINE, 0), request)
        while _line((yield LINE, 0), request) not in (b"\r\n", b"\n", b""):  # trailers
            pass
        content = b"".join(parts)
    elif b"content-length" in fields:
        try:
            length = int(fields[b"content-length"])
        except ValueError:
            raise _refused("The answer's Content-Length is not a number.", request) from None
        content = _exactly((yield EXACTLY, length), length, request)
    else:  # the answer ends where the connection does
        content, keep = (yield REST, 0), False
    extensions = {"http_version": version, "reason_phrase": reason[0].strip() if reason else b""}
    return httpx.Response(status, headers=headers, stream=httpx.ByteStream(content), extensions=extensions), keep


def _chunk_size(line: bytes, request: httpx.Request) -> int:
    try:
        return int(line.split(b";", 1)[0], 16)
    except ValueError:
        raise _refused("A chunk of the answer has no valid size.", request) from None


def _request_bytes(request: httpx.Request, body: bytes) -> bytes:
    if request.headers.get("Transfer-Encoding", "").lower() == "chunked":  # a body given as an iterator
        body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
    head = b"".join(name + b": " + value + b"\r\n" for name, value in request.headers.raw)
    return b"%s %s HTTP/1.1\r\n%s\r\n%s" % (request.method.encode("ascii"), request.url.raw_path, head, body)


def _origin(request: httpx.Request) -> Origin:
    url = request.url
    return url.raw_scheme, url.raw_host, url.port or (443 if url.scheme == "https" else 80)


def _readable(sock: Any) -> bool:
    """An idle connection has nothing to read: readable, the server closed it (or broke the protocol)."""
    return sock is None or sock.fileno() == -1 or bool(select.select([sock], [], [], 0)[0])


class _Idle:
    """The kept-alive connections not in use, by server: up to ``IDLE_PER_ORIGIN`` each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connections: dict[Origin, list[Any]] = {}
        self._closed = False

    def take(self, origin: Origin) -> Any:
        """An idle connection to ``origin`` the server has not closed, or None."""
        with self._lock:
            idle = self._connections.get(origin, [])
            while idle:
                conn = idle.pop()
                if not conn.closed_while_idle():
                    return conn
                conn.close()
        return None

    def give(self, origin: Origin, conn: Any, keep: bool) -> None:
        with self._lock:
            idle = self._connections.setdefault(origin, [])
            if keep and not self._closed and len(idle) < IDLE_PER_ORIGIN:
                idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._connections = [c for conns in self._connections.values() for c in conns], {}
        for conn in idle:
            conn.close()


class _Socket:
    """A blocking connection: its socket and a buffered reader of it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")

    def closed_while_idle(self) -> bool:
        return _readable(self.sock)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def answer(self, request: httpx.Request) -> tuple[httpx.Response, bool]:
        reading = _answer(request)
        want, size = next(reading)
        while True:
            if want == LINE:
                data = self.reader.readline(MAX_LINE + 1)
            else:
                data = self.reader.read(size if want == EXACTLY else -1)
            try:
                want, size = reading.send(data)
            except StopIteration as done:
                return done.value


class BlockingTransport(httpx.BaseTransport):
    """HTTP/1.1 on kept-alive sockets (one per thread in flight, up to ``IDLE_PER_ORIGIN`` kept idle
    per server), TLS verified against ``verify``; httpx's timeouts (connect, write, read) and
    exceptions. An idle connection the server closed is not reused."""

    def __init__(self, verify: ssl.SSLContext) -> None:
        self._tls = verify
        self._idle = _Idle()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        origin, timeouts = _origin(request), request.extensions.get("timeout", {})
        conn = self._idle.take(origin) or self._connect(origin, timeouts.get("connect"), request)
        try:
            conn.sock.settimeout(timeouts.get("write"))
            with _sending(request):
                conn.sock.sendall(_request_bytes(request, request.read()))
            conn.sock.settimeout(timeouts.get("read"))
            with _reading(request):
                response, keep = conn.answer(request)
        except BaseException:
            conn.close()
            raise
        self._idle.give(origin, conn, keep)
        return response

    def _connect(self, origin: Origin, timeout: float | None, request: httpx.Request) -> _Socket:
        scheme, host, port = origin
        with _connecting(request):
            sock = socket.create_connection((host.decode("ascii"), port), timeout=timeout)
        with _connecting(request, "The TLS handshake timed out."):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if scheme == b"https":
                    sock = self._tls.wrap_socket(sock, server_hostname=host.decode("ascii"))
            except BaseException:
                sock.close()
                raise
        return _Socket(sock)

    def close(self) -> None:
        self._idle.close()


class _Stream:
    """An asyncio connection: its reader and writer (asyncio sets TCP_NODELAY)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def closed_while_idle(self) -> bool:
        return self.reader.at_eof() or self.writer.is_closing() or _readable(self.writer.get_extra_info("socket"))

    def close(self) -> None:
        self.writer.close()

    async def answer(self, request: httpx.Request) -> tuple[httpx.Response, bool]:
        reading = _answer(request)
        want, size = next(reading)
        while True:
            try:
                if want == LINE:
                    data = await self.reader.readline()
                elif want == EXACTLY:
                    data = await self.reader.readexactly(size)
                else:
                    data = await self.reader.read()
            except asyncio.IncompleteReadError as cut:
                data = cut.partial
            except ValueError:  # a line past the stream's limit (MAX_LINE)
                raise _too_long(request) from None
            try:
                want, size = reading.send(data)
            except StopIteration as done:
                return done.value


class AsyncioTransport(httpx.AsyncBaseTransport):
    """``BlockingTransport`` on asyncio's streams, with asyncio's timeouts: for one event loop (an
    httpx client's transport belongs to the loop that opened its connections)."""

    def __init__(self, verify: ssl.SSLContext) -> None:
        self._tls = verify
        self._idle = _Idle()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        origin, timeouts = _origin(request), request.extensions.get("timeout", {})
        conn = self._idle.take(origin) or await self._connect(origin, timeouts.get("connect"), request)
        try:
            with _sending(request):
                async with asyncio.timeout(timeouts.get("write")):
                    conn.writer.write(_request_bytes(request, await request.aread()))
                    await conn.writer.drain()
            with _reading(request):
                async with asyncio.timeout(timeouts.get("read")):
                    response, keep = await conn.answer(request)
        except BaseException:  # a cancelled request too: its answer would be read by the next
            conn.close()
            raise
        self._idle.give(origin, conn, keep)
        return response

    async def _connect(self, origin: Origin, connect_timeout: float | None, request: httpx.Request) -> _Stream:
        scheme, host, port = origin
        tls: dict[str, Any] = {"ssl": self._tls, "server_hostname": host.decode("ascii")} if scheme == b"https" else {}
        with _connecting(request):
            async with asyncio.timeout(connect_timeout):
                reader, writer = await asyncio.open_connection(host.decode("ascii"), port, limit=MAX_LINE, **tls)
        return _Stream(reader, writer)

    async def aclose(self) -> None:
        self._idle.close()
