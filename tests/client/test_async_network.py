"""The async client's HTTP/1.1 (agentstate.client.network.AsyncioTransport, on asyncio's streams)
against real sockets that refuse, drop, stay silent, close an idle connection, answer in each
framing, break the protocol, or speak TLS: the answers and exceptions httpx's own transport gave."""

import asyncio
import socket
import ssl

import httpx
import pytest

from agentstate.client import AsyncAgentStateClient, NetworkError
from agentstate.client.network import AsyncioTransport
from tests.client.sockets import OK, serving


@pytest.fixture
def answers_once_then_closes():
    """Answers one request on each connection, keeping it alive, then closes it while idle."""

    def handle(conn):
        conn.recv(65536)
        conn.sendall(OK)

    with serving(handle) as served:
        yield served


@pytest.fixture
def dropping_server():
    """Reads each request and closes the connection without answering."""
    with serving(lambda conn: conn.recv(65536)) as (url, _):
        yield url


def test_the_async_client_runs_on_asyncio_streams():
    client = AsyncAgentStateClient("http://127.0.0.1:9", "k")
    assert isinstance(client._http._transport, AsyncioTransport)


@pytest.mark.asyncio
async def test_a_refused_connection_raises_network_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with AsyncAgentStateClient(f"http://127.0.0.1:{port}", "k", retries=1) as client:
        with pytest.raises(NetworkError) as caught:
            await client.session_create("u", "s")
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


@pytest.mark.asyncio
async def test_a_dropped_request_safe_to_repeat_is_retried_then_raises(dropping_server):
    async with AsyncAgentStateClient(dropping_server, "k", retries=2) as client:
        with pytest.raises(NetworkError) as caught:
            await client.session_get("u", "s")
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)


@pytest.mark.asyncio
async def test_the_timeout_bounds_a_silent_server():
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (backlog) but never answers
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        async with AsyncAgentStateClient(url, "k", timeout=0.2, retries=0) as client:
            with pytest.raises(NetworkError) as caught:
                await client.health()
        assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    finally:
        listener.close()


@pytest.mark.asyncio
async def test_an_idle_connection_the_server_closed_is_not_reused(answers_once_then_closes):
    """Without retries: a request sent on the closed connection would fail."""
    url, accepted = answers_once_then_closes
    async with AsyncAgentStateClient(url, "k", retries=0) as client:
        assert (await client.health())["status"] == "ok"
        for _ in range(100):  # until the server has closed its side
            if accepted and accepted[0].fileno() == -1:
                break
            await asyncio.sleep(0.01)
        assert (await client.health())["status"] == "ok"
    assert len(accepted) == 2


@pytest.mark.asyncio
async def test_tls_is_verified_against_the_context_given(tls_server):
    url, trusting, _ = tls_server
    async with httpx.AsyncClient(transport=AsyncioTransport(trusting)) as client:
        response = await client.get(url + "/livez")
    assert response.json() == {"status": "ok"}
    async with httpx.AsyncClient(transport=AsyncioTransport(ssl.create_default_context())) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(url + "/livez")


@pytest.mark.parametrize(
    "answer, connections",
    [
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n"
            + OK[-16:-9]
            + b"\r\n9\r\n"
            + OK[-9:]
            + b"\r\n0\r\n\r\n",
            1,
        ),
        (b"HTTP/1.1 100 Continue\r\n\r\n" + OK, 1),
        (b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + OK[-16:], 2),
    ],
    ids=["chunked", "after an interim answer", "to the end of the connection"],
)
@pytest.mark.asyncio
async def test_every_framing_of_an_answer_is_read_and_the_connection_kept_when_it_may_be(answer, connections):
    def handle(conn):
        for _ in range(2):
            request = b""
            while b"\r\n\r\n" not in request:
                if not (data := conn.recv(65536)):
                    return
                request += data
            conn.sendall(answer)
            if connections == 2:  # the answer ends with its connection
                return

    with serving(handle) as (url, accepted):
        async with AsyncAgentStateClient(url, "k", retries=0) as client:
            assert [await client.health(), await client.health()] == [{"status": "ok"}] * 2
    assert len(accepted) == connections


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\n" + b"x" * 70000,
    ],
)
@pytest.mark.asyncio
async def test_an_answer_that_breaks_the_protocol_is_a_network_error(answer):
    def handle(conn):
        conn.recv(65536)
        conn.sendall(answer)

    with serving(handle) as (url, _):
        async with AsyncAgentStateClient(url, "k", retries=0) as client:
            with pytest.raises(NetworkError) as caught:
                await client.health()
    assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError)
