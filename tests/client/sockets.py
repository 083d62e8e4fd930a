"""Servers on a thread for the client's network tests: TCP (each connection handed to ``handle``)
and HTTPS with a certificate of its own; what they answer."""

import contextlib
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{"status": "ok"}'


@contextlib.contextmanager
def serving(handle: Callable[[socket.socket], None]) -> Iterator[tuple[str, list[socket.socket]]]:
    """Yields the server's ``http://`` URL and the connections it accepted so far."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)
            with conn:
                handle(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        listener.close()
        thread.join()


def requests_of(conn: socket.socket) -> Iterator[bytes]:
    """Each request read from ``conn`` (headers only: these tests send no body), until it closes."""
    buffer = b""
    while True:
        while b"\r\n\r\n" not in buffer:
            data = conn.recv(65536)
            if not data:
                return
            buffer += data
        request, buffer = buffer.split(b"\r\n\r\n", 1)
        yield request


@contextlib.contextmanager
def serving_tls(directory: Path) -> Iterator[tuple[str, ssl.SSLContext, list[socket.socket]]]:
    """An HTTPS server for 127.0.0.1 with a certificate of its own, answering ``OK`` to each request
    on a kept-alive connection; yields its URL, a context that trusts it, and its connections."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)

    def handle(conn: socket.socket) -> None:
        try:
            with server_context.wrap_socket(conn, server_side=True) as tls:
                for _ in requests_of(tls):
                    tls.sendall(OK)
        except (ssl.SSLError, OSError):  # a client that does not trust the certificate hangs up
            pass

    with serving(handle) as (url, accepted):
        yield url.replace("http://", "https://"), ssl.create_default_context(cafile=str(cert)), accepted
