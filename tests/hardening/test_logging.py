"""Structured request logs: one JSON line per request with a request id echoed in X-Request-ID;
API keys, stored contents (messages, state, user-data values), user and session ids and the Host
header never reach the logs, on success, on client errors and on crashes (Django's own
django.request, django.security and development-server loggers included)."""

import io
import json
import logging

import pytest
from django.core.servers.basehttp import WSGIRequestHandler
from django.test import Client

from agentstate.logging import JsonFormatter
from tests.hardening.crash_urls import SECRET_IN_ERROR


@pytest.fixture
def log_output():
    """What the configured console handlers (JSON formatter, request-id filter) write."""
    buffer = io.StringIO()
    handlers = {
        handler
        for name in ("django", "agentstate")
        for handler in logging.getLogger(name).handlers
        if isinstance(handler.formatter, JsonFormatter)  # pytest adds handlers of its own
    }
    assert handlers, "LOGGING configures no handler"
    previous = [(handler, handler.setStream(buffer)) for handler in handlers]
    yield buffer
    for handler, stream in previous:
        handler.setStream(stream)


def lines(buffer: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]


def request_lines(buffer: io.StringIO) -> list[dict]:
    return [line for line in lines(buffer) if line["logger"] == "agentstate.request"]


@pytest.mark.django_db
def test_each_request_logs_one_json_line_with_the_echoed_request_id(log_output):
    response = Client().get("/admin/login/")
    request_id = response.headers["X-Request-ID"]
    assert len(request_id) == 32
    [line] = request_lines(log_output)
    assert line["request_id"] == request_id
    assert line["method"] == "GET" and line["route"] == "/admin/login/" and line["status"] == 200
    assert line["duration_ms"] >= 0 and line["level"] == "INFO"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "incoming, kept",
    [
        ("req-2026.01:abc_DEF", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("has space", False),
        ('"}{"injected": 1', False),
    ],
)
def test_a_callers_request_id_is_kept_only_when_it_is_a_plain_token(log_output, incoming, kept):
    response = Client().get("/admin/login/", HTTP_X_REQUEST_ID=incoming)
    echoed = response.headers["X-Request-ID"]
    assert (echoed == incoming) is kept
    assert request_lines(log_output)[0]["request_id"] == echoed


@pytest.mark.django_db
def test_django_request_warnings_carry_the_request_id(log_output):
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    warning = next(line for line in lines(log_output) if line["logger"] == "django.request")
    assert warning["request_id"] == response.headers["X-Request-ID"]
    assert warning["status_code"] == 404


@pytest.mark.django_db
def test_a_crash_is_logged_by_type_and_place_never_by_its_message(log_output, settings):
    settings.ROOT_URLCONF = "tests.hardening.crash_urls"
    response = Client(raise_request_exception=False).get("/test-crash/")
    assert response.status_code == 500
    output = log_output.getvalue()
    assert SECRET_IN_ERROR not in output and "4111" not in output
    error = next(line for line in lines(log_output) if line["logger"] == "django.request")
    assert error["level"] == "ERROR" and error["request_id"] == response.headers["X-Request-ID"]
    assert error["exception"]["type"] == "builtins.ValueError"
    assert any("crash_urls.py" in frame for frame in error["exception"]["frames"])
    assert request_lines(log_output)[0]["status"] == 500


SECRETS = {
    "message": "MSG-7f3a-do-not-log",
    "state": "STATE-91c2-do-not-log",
    "value": "VALUE-c4d8-do-not-log",
    "metadata": "META-5e11-do-not-log",
    "working": "WS-0b9e-do-not-log",
}
S = "/api/v1/users/u1/sessions/s1/"


@pytest.mark.django_db
def test_api_keys_and_stored_contents_never_reach_the_logs(log_output, api, agent_key, settings, monkeypatch):
    from sessions_app import services

    key_prefix, key_secret = agent_key.split(".")
    requests = [
        ("post", "/api/v1/sessions/", {"user_id": "u1", "session_id": "s1", "metadata": {"m": SECRETS["metadata"]}}),
        ("post", "/api/v1/sessions/", {"user_id": "u1", "session_id": "s1", "metadata": {"m": SECRETS["metadata"]}}),
        ("post", S + "messages/", {"content": SECRETS["message"], "client_id": "c1"}),
        ("post", S + "messages/", {"content": SECRETS["message"], "colour": SECRETS["message"]}),  # 400
        ("post", S + "messages/", {"content": SECRETS["message"] + "\x00"}),  # 400 (NUL)
        ("post", S + "rounds/", {"state": {"s": SECRETS["state"]}}),
        ("put", S + "rounds/1/", {"state": {"s": SECRETS["state"]}}),
        ("put", S + "working-state/", {"w": SECRETS["working"]}),
        ("put", "/api/v1/users/u1/data/email/", {"value": SECRETS["value"]}),
        ("put", "/api/v1/users/u1/data/email/", {"value": [SECRETS["value"]] * 2000}),  # 413 below
        ("get", S + "messages/", None),
        ("get", S + "restore/", None),
        ("get", "/api/v1/users/u1/data/email/", None),
        ("get", "/api/v1/users/u2/data/email/", None),  # 404
    ]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 20_000
    statuses = []
    for method, path, body in requests:
        response = api.get(path) if method == "get" else getattr(api, method)(path, body, format="json")
        statuses.append(response.status_code)
    # If-Match conflict, a wrong key that looks real, the key in the other header.
    statuses.append(
        api.patch(S, {"metadata": {"m": SECRETS["metadata"]}}, format="json", HTTP_IF_MATCH='"999"').status_code
    )
    statuses.append(Client().get(S, HTTP_AUTHORIZATION=f"Api-Key {key_prefix}.{'x' * len(key_secret)}").status_code)
    statuses.append(Client().get(S, HTTP_X_API_KEY=agent_key).status_code)
    # A crash inside the API whose exception quotes what was being stored.
    monkeypatch.setattr(services, "message_append_to", lambda **kw: (_ for _ in ()).throw(ValueError(repr(kw))))
    crash_client = api.__class__(raise_request_exception=False)
    crash_client.credentials(HTTP_AUTHORIZATION=f"Api-Key {agent_key}")
    statuses.append(crash_client.post(S + "messages/", {"content": SECRETS["message"]}, format="json").status_code)

    assert {400, 401, 404, 409, 412, 413, 500} <= set(statuses), statuses
    output = log_output.getvalue()
    assert len(request_lines(log_output)) == len(statuses)
    assert any(line["logger"] == "django.request" and line["level"] == "ERROR" for line in lines(log_output))
    for name, secret in {**SECRETS, "key": agent_key, "key secret": key_secret, "key prefix": key_prefix}.items():
        assert secret not in output, f"the {name} reached the logs"
    assert all(line["tenant"] == "acme" for line in request_lines(log_output) if line["status"] not in (401,))


USER_ID, SESSION_ID, HOST = "uid-5ca1ab1e", "sid-0ddba11", "host-f00d.example"


def assert_no_identifiers(output: str) -> None:
    for name, value in {"user id": USER_ID, "session id": SESSION_ID, "Host header": HOST}.items():
        assert value not in output, f"the {name} reached the logs"
    assert "f00d" not in output and "5ca1ab1e" not in output and "0ddba11" not in output


@pytest.mark.django_db
def test_user_and_session_ids_never_reach_the_logs_only_the_route_does(log_output, api, settings):
    """Paths carrying user ids stayed in the request log after the user was erased."""
    settings.ALLOWED_HOSTS = ["testserver"]
    session = f"/api/v1/users/{USER_ID}/sessions/{SESSION_ID}/"
    statuses = [
        api.post("/api/v1/sessions/", {"user_id": USER_ID, "session_id": SESSION_ID}, format="json").status_code,  # 201
        api.get(session + "messages/", {"role": USER_ID}).status_code,  # 200, the id in the query too
        api.get("/api/v1/sessions/", {"user_id": USER_ID}).status_code,  # 200
        api.get(f"/api/v1/users/{USER_ID}/sessions/{SESSION_ID}-missing/").status_code,  # 404 from the view
        api.get(f"/no-such-page/{USER_ID}/{SESSION_ID}/").status_code,  # 404 from the resolver
        api.post(session + "messages/", {"content": "x", "role": 5}, format="json").status_code,  # 400
        api.get(f"/api/v1/users/{USER_ID}%00/data/").status_code,  # 400 in the path
        api.get(session + "messages/", HTTP_HOST=HOST).status_code,  # 400 DisallowedHost
        api.put(session + "messages/", {}, format="json").status_code,  # 405
    ]
    assert statuses == [201, 200, 200, 404, 404, 400, 400, 400, 405]
    assert_no_identifiers(log_output.getvalue())
    routes = [line["route"] for line in request_lines(log_output)]
    assert routes[:4] == [
        "/api/v1/sessions/",
        "/api/v1/users/{user_id}/sessions/{session_id}/messages/",
        "/api/v1/sessions/",
        "/api/v1/users/{user_id}/sessions/{session_id}/",
    ]
    assert routes[4] is None  # matched no route: nothing of the path is kept
    assert all("path" not in line for line in lines(log_output))
    warnings = [line["message"] for line in lines(log_output) if line["logger"] == "django.request"]
    assert "Not Found: /api/v1/users/{user_id}/sessions/{session_id}/" in warnings and "Not Found" in warnings


@pytest.mark.django_db
def test_a_disallowed_host_is_logged_without_its_value(log_output, settings):
    settings.ALLOWED_HOSTS = ["testserver"]
    response = Client().get("/api/v1/sessions/", HTTP_HOST=HOST)
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid"
    assert_no_identifiers(log_output.getvalue())
    [refused] = [line for line in lines(log_output) if line["logger"] == "django.security.DisallowedHost"]
    assert refused["message"] == "DisallowedHost: request refused (400)"
    assert refused["request_id"] == response.headers["X-Request-ID"]
    assert refused["exception"]["type"] == "django.core.exceptions.DisallowedHost"


def test_the_development_server_logs_only_what_the_app_never_answered(log_output):
    """runserver (and so quickstart) logs each request line through django.server: the request
    log has those already (each request was logged twice); a request the server could not parse
    is logged, without what was sent."""
    handler = WSGIRequestHandler.__new__(WSGIRequestHandler)
    handler.request = None
    handler.log_message(
        '"%s" %s %s', f"GET /api/v1/users/{USER_ID}/sessions/{SESSION_ID}/?host={HOST} HTTP/1.1", "200", "17"
    )
    handler.log_message('"%s" %s %s', f"DELETE /api/v1/users/{USER_ID}/ HTTP/1.1", "404", "17")
    handler.log_error("code %d, message %s", 400, f"Bad request syntax ('GET /{USER_ID} {SESSION_ID}')")
    assert_no_identifiers(log_output.getvalue())
    assert [line["message"] for line in lines(log_output)] == ["Unparsable request (400)"]
