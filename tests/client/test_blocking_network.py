"""The blocking client's sockets (agentstate.client.network.BlockingTransport) against real sockets
that refuse, drop, stay silent, close an idle connection, answer in every framing HTTP/1.1 allows,
break the protocol, or speak TLS: the answers httpx's own transport gave, and its exceptions."""

import socket
import ssl
import threading

import httpx
import pytest

from agentstate.client import AgentStateClient, NetworkError
from agentstate.client.network import BlockingTransport
from tests.client.sockets import OK, requests_of, serving

BODY = OK[-16:]


def _answering(*answers, closing=False):
    """A handler that answers the requests of a connection with ``answers`` in turn, then closes it
    (``closing``: after each answer)."""

    def handle(conn):
        for _, answer in zip(requests_of(conn), answers, strict=False):
            conn.sendall(answer)
            if closing:
                return

    return handle


def test_the_blocking_client_runs_on_its_own_transport():
    with AgentStateClient("http://127.0.0.1:9", "k") as client:
        assert isinstance(client._http._transport, BlockingTransport)


def test_one_kept_alive_connection_serves_a_callersrequests_of():
    with serving(_answering(*[OK] * 5)) as (url, accepted), AgentStateClient(url, "k") as client:
        assert [client.health() for _ in range(5)] == [{"status": "ok"}] * 5
    assert len(accepted) == 1


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n"
            + BODY[:7]
            + b"\r\n9\r\n"
            + BODY[7:]
            + b"\r\n0\r\nX-Trailer: t\r\n\r\n",
            id="chunked",
        ),
        pytest.param(b"HTTP/1.1 100 Continue\r\n\r\n" + OK, id="after an interim answer"),
        pytest.param(
            b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY, id="to the end of the connection"
        ),
        pytest.param(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 16\r\n\r\n" + BODY, id="then closed"),
    ],
)
def test_every_framing_of_an_answer_is_read_and_a_connection_is_reused_only_when_it_may_be(answer):
    """An answer that ends the connection (HTTP/1.0 without keep-alive, ``Connection: close``, no
    length) makes the next request open another; the others keep theirs."""
    keeps = b"chunked" in answer or b"100 Continue" in answer
    answering = _answering(answer, answer, closing=not keeps)
    with serving(answering) as (url, accepted), AgentStateClient(url, "k", retries=0) as client:
        assert client.health() == {"status": "ok"}
        assert client.health() == {"status": "ok"}
    assert len(accepted) == (1 if keeps else 2)


def test_a_gzipped_answer_is_decoded():
    import gzip

    packed = gzip.compress(BODY)
    answer = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(packed), packed)
    with serving(_answering(answer)) as (url, _), AgentStateClient(url, "k") as client:
        assert client.health() == {"status": "ok"}


def test_a_request_body_and_headers_reach_the_server_as_sent():
    seen = []

    def handle(conn):
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < 13:
            data += conn.recv(65536)
        seen.append(data)
        conn.sendall(OK)

    with serving(handle) as (url, _), httpx.Client(transport=BlockingTransport(ssl.create_default_context())) as http:
        assert http.post(url + "/a%2Fb?c=d%20e", content=b'{"hi": "you"}', headers={"X-Api-Key": "k"}).json() == {
            "status": "ok"
        }
    head, body = seen[0].split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /a%2Fb?c=d%20e HTTP/1.1" and body == b'{"hi": "you"}'
    assert {b"Content-Length: 13", b"X-Api-Key: k", b"Host: " + url.split("//")[1].encode()} <= set(lines)


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nbroken\r\n\r\n",
    ],
    ids=["not HTTP", "cut short", "a header without a colon"],
)
def test_an_answer_that_breaks_the_protocol_is_a_network_error(answer):
    def handle(conn):
        next(requests_of(conn))
        conn.sendall(answer)

    with (
        serving(handle) as (url, _),
        AgentStateClient(url, "k", retries=0) as client,
        pytest.raises(NetworkError) as caught,
    ):
        client.health()
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)


def test_a_refused_connection_is_retried_then_raises_network_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with AgentStateClient(f"http://127.0.0.1:{port}", "k", retries=1) as client, pytest.raises(NetworkError) as caught:
        client.session_create("u", "s")
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


@pytest.mark.parametrize(
    "request_, tries", [(lambda c: c.session_get("u", "s"), 3), (lambda c: c.session_create("u", "s"), 1)]
)
def test_a_dropped_request_is_retried_only_when_safe_to_repeat(request_, tries):
    with (
        serving(lambda conn: conn.recv(65536)) as (url, accepted),
        AgentStateClient(url, "k", retries=2) as client,
        pytest.raises(NetworkError) as caught,
    ):
        request_(client)
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)
    assert len(accepted) == tries


def test_the_timeout_bounds_a_silent_server():
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (backlog) but never answers
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with AgentStateClient(url, "k", timeout=0.2, retries=0) as client, pytest.raises(NetworkError) as caught:
            client.health()
        assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    finally:
        listener.close()


def test_an_idle_connection_the_server_closed_is_not_reused():
    """Without retries: a request sent on the closed connection would fail."""
    closed = threading.Event()

    def handle(conn):
        next(requests_of(conn))
        conn.sendall(OK)
        conn.shutdown(socket.SHUT_RDWR)
        closed.set()

    with serving(handle) as (url, accepted), AgentStateClient(url, "k", retries=0) as client:
        assert client.health() == {"status": "ok"}
        assert closed.wait(5)
        assert client.health() == {"status": "ok"}
    assert len(accepted) == 2


def test_threads_in_flight_at_once_each_have_a_connection():
    both_in = threading.Barrier(2, timeout=5)

    def handle(conn):
        for _ in requests_of(conn):
            both_in.wait()  # answers only once the other thread's request is in flight too
            conn.sendall(OK)

    def serve_each_connection_on_its_thread(conn):
        threading.Thread(target=handle, args=(conn.dup(),), daemon=True).start()

    with serving(serve_each_connection_on_its_thread) as (url, accepted), AgentStateClient(url, "k") as client:
        answers = []
        threads = [threading.Thread(target=lambda: answers.append(client.health())) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    assert answers == [{"status": "ok"}] * 2 and len(accepted) == 2


def test_tls_is_verified_against_the_context_given_and_its_connection_kept(tls_server):
    url, trusting, accepted = tls_server
    with httpx.Client(transport=BlockingTransport(trusting)) as client:
        assert [client.get(url + "/livez").json() for _ in range(3)] == [{"status": "ok"}] * 3
    assert len(accepted) == 1
    with (
        httpx.Client(transport=BlockingTransport(ssl.create_default_context())) as client,
        pytest.raises(httpx.ConnectError),
    ):
        client.get(url + "/livez")
