"""The client's behaviour that needs no agentstate server: importability, error mapping, URL
encoding, and retries against real sockets that fail (refused, dropped, silent)."""

import socket
import subprocess
import sys

import httpx
import pytest

from agentstate.client import (
    AgentStateClient,
    AgentStateError,
    AuthenticationError,
    Conflict,
    NetworkError,
    NotFound,
    Page,
    PermissionDenied,
    PreconditionFailed,
    RateLimited,
    ServerError,
    ValidationError,
)
from agentstate.client.calls import segment, session_url
from agentstate.client.errors import error_from_response
from tests.client.sockets import serving


def test_client_imports_without_django():
    code = (
        "import sys, agentstate.client\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith(('django.', 'rest_framework', "
        "'sessions_app', 'userdata_app', 'agentstate.tenancy')))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_clients_share_one_tls_context():
    """Each client built its own, reading every certificate authority again."""
    clients = [AgentStateClient("https://agentstate.invalid", "k"), AgentStateClient("http://127.0.0.1:9", "k")]
    contexts = {id(client._http._transport._tls) for client in clients}
    for client in clients:
        client.close()
    assert len(contexts) == 1


def _error(status, body=None, headers=None, text=None):
    response = httpx.Response(status, json=body, headers=headers, text=text, request=httpx.Request("GET", "http://x/"))
    return error_from_response(response)


@pytest.mark.parametrize(
    "status, cls",
    [
        (400, ValidationError),
        (401, AuthenticationError),
        (403, PermissionDenied),
        (404, NotFound),
        (409, Conflict),
        (412, PreconditionFailed),
        (413, ValidationError),
        (415, ValidationError),
        (429, RateLimited),
        (500, ServerError),
        (503, ServerError),
        (405, AgentStateError),
    ],
)
def test_each_status_maps_to_its_exception(status, cls):
    error = _error(status, {"error": {"code": "c", "message": "what went wrong", "fields": {"f": ["bad"]}}})
    assert type(error) is cls
    assert (error.status_code, error.code, error.fields) == (status, "c", {"f": ["bad"]})
    assert error.message == "what went wrong"
    assert str(error) == "what went wrong"


def test_rate_limited_reads_retry_after_seconds():
    error = _error(429, {"error": {"code": "throttled", "message": "slow down"}}, headers={"Retry-After": "7"})
    assert error.retry_after == 7.0
    assert _error(429, {"error": {"code": "throttled", "message": "x"}}).retry_after is None


def test_error_bodies_that_are_not_the_api_shape_still_give_a_message():
    assert _error(401, {"detail": "Invalid key."}).message == "Invalid key."
    html = _error(502, text="<html>Bad gateway</html>")
    assert isinstance(html, ServerError) and "502" in html.message and "Bad gateway" in html.message


def test_path_segments_are_percent_encoded():
    assert segment("a/b c?d#e%") == "a%2Fb%20c%3Fd%23e%25"
    assert segment("..") == "%2E%2E" and segment(".") == "%2E" and segment("a.b") == "a.b"
    assert session_url("ü", "s/1", "rounds", 3) == "/api/v1/users/%C3%BC/sessions/s%2F1/rounds/3/"
    with pytest.raises(TypeError):
        segment(42)


def test_page_cursor_comes_from_the_next_link():
    page = Page[int](results=[1], next="http://h/api/v1/sessions/?cursor=abc%3D&page_size=2")
    assert page.next_cursor == "abc="
    assert Page[int](results=[], next=None).next_cursor is None


@pytest.mark.parametrize("base_url", ["http://h", "http://h/", "http://h/behind/a/proxy", "http://h/behind/a/proxy/"])
def test_requests_go_to_the_base_url_with_their_path_and_query_and_carry_no_cookie(base_url):
    sent = []

    def answer(request):
        sent.append(request)
        return httpx.Response(200, json={"results": [], "next": None}, headers={"Set-Cookie": "sessionid=x; Path=/"})

    prefix = base_url.rstrip("/").removeprefix("http://h")
    with AgentStateClient(base_url, "key", transport=httpx.MockTransport(answer)) as client:
        client.message_list("ü ser", "s/1", after_seq=3)
        client.message_list("ü ser", "s/1", after_seq=3)
    first, second = sent
    assert first.url.raw_path == f"{prefix}/api/v1/users/%C3%BC%20ser/sessions/s%2F1/messages/?after_seq=3".encode()
    assert first.url.host == "h" and first.headers["X-Api-Key"] == "key"
    assert "cookie" not in second.headers  # the answer's cookie was not kept


class _Counting(httpx.HTTPTransport):
    """A real transport that counts the attempts it is asked to make."""

    def __init__(self):
        super().__init__()
        self.attempts = 0

    def handle_request(self, request):
        self.attempts += 1
        return super().handle_request(request)


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def dropping_server():
    """A TCP server that reads each request and closes the connection without answering: the
    request reached the server, so only a request that is safe to repeat may be retried."""
    with serving(lambda conn: conn.recv(65536)) as (url, _):
        yield url


def test_refused_connections_are_retried_then_raise_network_error_naming_the_server():
    transport = _Counting()
    port = _free_port()
    client = AgentStateClient(f"http://127.0.0.1:{port}", "k", retries=2, transport=transport)
    with pytest.raises(NetworkError) as caught:
        client.session_create("u", "s")  # nothing was sent: safe to retry even a POST
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert transport.attempts == 3
    assert str(caught.value).startswith(f"POST http://127.0.0.1:{port}/api/v1/sessions/: ConnectError: ")


@pytest.mark.parametrize(
    "request_, attempts",
    [
        (lambda c: c.session_get("u", "s"), 3),
        (lambda c: c.round_put("u", "s", 1, {}), 3),
        (lambda c: c.message_append("u", "s", [{"client_id": "m1", "content": "hi"}]), 3),
        (lambda c: c.session_create("u", "s"), 1),
        (lambda c: c.message_append("u", "s", [{"content": "hi"}]), 1),
        (lambda c: c.round_save("u", "s", {}), 1),
        (lambda c: c.round_save("u", "s", {}, round_id=4), 3),
    ],
)
def test_only_requests_safe_to_repeat_are_retried_once_sent(dropping_server, request_, attempts):
    transport = _Counting()
    client = AgentStateClient(dropping_server, "k", retries=2, transport=transport)
    with pytest.raises(NetworkError):
        request_(client)
    assert transport.attempts == attempts


def test_timeout_argument_bounds_a_silent_server():
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (backlog) but never answers
    try:
        client = AgentStateClient(f"http://127.0.0.1:{listener.getsockname()[1]}", "k", timeout=0.2, retries=0)
        with pytest.raises(NetworkError) as caught:
            client.health()
        assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    finally:
        listener.close()
