"""The same rules for the same kind of input, on every endpoint of every framework.

Each validator is tested once against the whole table of edge values; then every (endpoint, field)
pair the OpenAPI schema lists gets one value per class, to show the field reaches its validator:
string fields a value with ASCII and Unicode whitespace at both ends (stored exactly as sent, but
for the ids of sessions being made, which are stripped by design), a NUL with a lone surrogate
(never a 5xx), JSON fields a number past a float's range and deep nesting (NaN never gets past a
body's parser: test_limits), JSON carried as text NaN, -Infinity, 1e400 and deep nesting (all
refused, nothing stored). A new endpoint is covered once it has a good request in
``GOOD_REQUESTS``; a test fails until it has. Every route with an id in its path refuses
percent-escapes that are not UTF-8, under WSGI and ASGI."""

from __future__ import annotations

import copy
import json
import math
import re

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application
from rest_framework.test import APIClient

from agentstate.exceptions import InvalidInput
from agentstate.tenancy.services import api_key_create
from agentstate.validation import (
    IDENTIFIER_MAX_LENGTH,
    MAX_BODY_DEPTH,
    MAX_JSON_DEPTH,
    clean_identifier,
    clean_json,
    clean_timestamp,
    parse_json_text,
)
from tests.api.assertions import assert_error
from tests.hardening.openapi import Field, operations, request_fields
from tests.hardening.stored import stored_everything
from tests.hardening.writes import WRITES, refused, send

# --- Each validator against the full table ------------------------------------------------------

WHITESPACE = [" ", "\t", "\u00a0", "\u1680", "\u2003", "\u200b", "\u3000", "\ufeff"]
KEPT_IDENTIFIERS = [f"{ws}a{ws}" for ws in WHITESPACE if ws != "\t"] + ["a b", "x" * IDENTIFIER_MAX_LENGTH, "%ED"]
REFUSED_IDENTIFIERS = ["", "x" * (IDENTIFIER_MAX_LENGTH + 1), "a/b", "a\x00b", "a\tb", "\x7f", "\ud800", 1, None]


@pytest.mark.parametrize("value", KEPT_IDENTIFIERS)
def test_an_identifier_is_kept_exactly_as_sent(value):
    assert clean_identifier(value, field="id") == value


@pytest.mark.parametrize("value", REFUSED_IDENTIFIERS)
def test_an_identifier_breaking_a_rule_is_refused(value):
    with pytest.raises(InvalidInput):
        clean_identifier(value, field="id")


def nested(levels: int, leaf: str = "{}") -> str:
    return '{"d":' * levels + leaf + "}" * levels


NOT_FINITE_TEXT = ["NaN", "-NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1E+999", "[1e400]"]
TOO_DEEP_TEXT = [nested(MAX_BODY_DEPTH + 1), "[" * 3000 + "]" * 3000, "[" * 3000]
FINE_TEXT = [
    '{"a": 1.5e308, "b": -0.0, "c": 1' + "0" * 400 + "}",
    nested(MAX_BODY_DEPTH - 1),
    '"a\\u0000b"',
    '["\\ud83d\\ude00", "\\\\ud800"]',  # a surrogate pair, and an escaped backslash before "ud800"
]


LONE_SURROGATE_TEXT = ['{"x": "\\ud800"}', '{"\\udc00": 1}', '["a\\ud83d"]', '{"x": "\ud800"}']


@pytest.mark.parametrize(
    "text", NOT_FINITE_TEXT + TOO_DEEP_TEXT + LONE_SURROGATE_TEXT + ["{", "", "{'a': 1}", "\u00a0{}"]
)
def test_json_text_breaking_a_rule_is_refused(text):
    with pytest.raises(InvalidInput):
        parse_json_text(text, field="state")


@pytest.mark.parametrize("text", FINE_TEXT)
def test_json_text_within_the_rules_is_read(text):
    assert parse_json_text(text, field="state") == json.loads(text)


def deep(levels: int) -> dict:
    return json.loads(nested(levels))


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, float("1e400"), {"a": [math.nan]}, deep(MAX_JSON_DEPTH + 1), "a\x00b", {1: 2}],
)
def test_a_json_document_breaking_a_rule_is_refused(value):
    with pytest.raises(InvalidInput):
        clean_json(value, field="metadata")


@pytest.mark.parametrize("value", [1.5e308, -0.0, 10**400, deep(MAX_JSON_DEPTH), {"\u00a0k\u2003": " v "}])
def test_a_json_document_within_the_rules_is_kept(value):
    assert clean_json(value, field="metadata") == value


@pytest.mark.parametrize(
    "value", [1e300, -1e18, math.nan, math.inf, -math.inf, 253402300800, -62135596801, True, "1", None]
)
def test_a_timestamp_no_datetime_can_hold_is_refused(value):
    with pytest.raises(InvalidInput):
        clean_timestamp(value, field="event.timestamp")


@pytest.mark.parametrize("value", [0, 1_700_000_000.5, -1.5, 253402300799.0, -62135596800])
def test_a_timestamp_in_the_years_1_to_9999_is_kept(value):
    assert clean_timestamp(value, field="event.timestamp") == value


# --- Every field of every endpoint reaches its validator ----------------------------------------

S = "/api/v1/users/u1/sessions/s1/"
ADK = "/api/v1/adk/apps/app/users/u1/sessions/"
LANGGRAPH_THREAD = {"thread_id": "t1", "default_user_id": "u1", "checkpoint_ns": "", "checkpoint_id": "c1"}
TYPED_VALUE = {"type": "json", "data": "e30=", "rendered": {}}

# A request each endpoint accepts, by operation: the fields are changed one at a time from it.
GOOD_REQUESTS = {
    "post /api/v1/adk/apps/{app_name}/users/{user_id}/sessions/": (ADK, {"session_id": "a2", "state": '{"k": 1}'}),
    "post /api/v1/adk/apps/{app_name}/users/{user_id}/sessions/{session_id}/events/": (
        ADK + "a1/events/",
        {"event": json.dumps({"id": "e2", "timestamp": 2.0, "author": "user"}), "last_event_id": "e1"},
    ),
    "post /api/v1/langgraph/checkpoints/": (
        "/api/v1/langgraph/checkpoints/",
        {**LANGGRAPH_THREAD, "checkpoint_id": "c2", "checkpoint": TYPED_VALUE, "metadata": {}, "channel_versions": {}},
    ),
    "post /api/v1/langgraph/writes/": (
        "/api/v1/langgraph/writes/",
        {**LANGGRAPH_THREAD, "task_id": "w1", "writes": [{"idx": 0, "channel": "ch", "value": TYPED_VALUE}]},
    ),
    "get /api/v1/langgraph/checkpoints/": ("/api/v1/langgraph/checkpoints/", {"filter": '{"step": 1}'}),
    "post /api/v1/langgraph/runs/delete/": ("/api/v1/langgraph/runs/delete/", {"run_ids": ["r1"]}),
    "post /api/v1/langgraph/threads/copy/": (
        "/api/v1/langgraph/threads/copy/",
        {"source_thread_id": "t1", "target_thread_id": "t2"},
    ),
    "post /api/v1/langgraph/threads/delete/": ("/api/v1/langgraph/threads/delete/", {"thread_id": "t1"}),
    "post /api/v1/langgraph/threads/prune/": ("/api/v1/langgraph/threads/prune/", {"thread_ids": ["t1"]}),
    "post /api/v1/users/{user_id}/sessions/{session_id}/fork/": (S + "fork/", {"new_session_id": "f1"}),
    "post /api/v1/users/{user_id}/sessions/{session_id}/messages/pop/": (S + "messages/pop/", {"idempotency_key": "k"}),
}


def _operation_of(method: str, url: str) -> str:
    for name in operations():
        op_method, template = name.split(" ", 1)
        if op_method == method and re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), url):
            return name
    raise LookupError(f"{method} {url} is no operation of the schema")


for _method, _url, _body in WRITES:  # the writes the other hardening tests send
    GOOD_REQUESTS.setdefault(_operation_of(_method, _url), (_url, _body))

# The ids of sessions being made are stripped (a blank one becomes a UUID), as AgentScope's and
# ADK's own services strip them: session create (ADK's create is one) and fork. Nothing else.
STRIPPED = {
    "post /api/v1/sessions/ body:session_id",
    "post /api/v1/adk/apps/{app_name}/users/{user_id}/sessions/ body:session_id",
    "post /api/v1/users/{user_id}/sessions/{session_id}/fork/ body:new_session_id",
}
FIELDS = request_fields()


@pytest.fixture
def everything(api, full_session):
    """full_session, an ADK session app/u1/a1 with an event, and a LangGraph thread t1."""
    assert api.post(ADK, {"session_id": "a1"}, format="json").status_code == 201
    event = json.dumps({"id": "e1", "timestamp": 1.0, "author": "user"})
    assert api.post(ADK + "a1/events/", {"event": event}, format="json").status_code == 201
    body = {**LANGGRAPH_THREAD, "checkpoint": TYPED_VALUE, "metadata": {"step": 1}, "channel_versions": {}}
    assert api.post("/api/v1/langgraph/checkpoints/", body, format="json").status_code == 201
    return api


def test_every_field_of_the_schema_has_a_good_request_to_change():
    assert {field.operation for field in FIELDS} <= GOOD_REQUESTS.keys()
    assert {str(field) for field in FIELDS} >= STRIPPED  # the exceptions are still fields


def request_with(api, field: Field, value, *, raw: str | None = None):
    """The operation's good request with ``field`` set to ``value``; ``raw`` JSON text, if given,
    is written in place of the value (no Python value encodes to ``1e400``)."""
    url, body = GOOD_REQUESTS[field.operation]
    method = field.operation.split(" ", 1)[0]
    placeholder = "\ufdd0placeholder"
    body = _set(copy.deepcopy(body), field.path, placeholder if raw is not None else value)
    if field.where == "query":
        return api.get(url, body)
    text = json.dumps(body)
    if raw is not None:
        text = text.replace(json.dumps(placeholder), raw)
    return send(api, method, url, text)


def _set(body, path, value):
    """``body`` with ``value`` at ``path``, the objects and lists on the way made if missing."""
    if not path:
        return value
    target = body
    for part, following in zip(path, [*path[1:], None], strict=True):
        if isinstance(target, list) and part == len(target):
            target.append(None)
        if following is None:
            target[part] = value
            break
        if (target[part] if isinstance(target, list) else target.get(part)) is None:
            target[part] = [] if isinstance(following, int) else {}
        target = target[part]
    return body


def assert_answered(response) -> None:
    """No server error, and a JSON body unless there is none (204)."""
    assert response.status_code < 500, response.content[:300]
    assert response.status_code == 204 or response["Content-Type"].startswith("application/json")


MARK = "edgemark"
SPACED = f" \u00a0{MARK}\u2003 "


@pytest.mark.crosscheck
@pytest.mark.parametrize("field", [f for f in FIELDS if f.kind == "string"], ids=str)
def test_a_string_field_stores_its_value_exactly_as_sent_or_refuses_it(everything, field):
    before = stored_everything()
    response = request_with(everything, field, SPACED)
    assert_answered(response)
    if response.status_code >= 400:
        assert stored_everything() == before
        return
    stored = json.dumps(stored_everything(), default=str)  # ASCII: "\u00a0" is spelled out
    exact = len(re.findall(rf" \\+u00a0{MARK}\\+u2003 ", stored))
    if str(field) in STRIPPED:
        assert stored.count(MARK) > 0 and exact == 0, "stored as sent, not stripped"
    else:
        assert stored.count(MARK) == exact, "stored trimmed or normalised"


@pytest.mark.crosscheck
@pytest.mark.parametrize("field", [f for f in FIELDS if f.kind == "string"], ids=str)
def test_a_string_field_refuses_a_nul_or_stores_it_without_a_server_error(everything, field):
    before = stored_everything()
    response = request_with(everything, field, "a\x00\ud800b")
    assert_answered(response)
    if response.status_code >= 400:
        assert stored_everything() == before


JSON_VALUES = {"overflow": '{"x": 1e400}', "deep": nested(MAX_JSON_DEPTH + 5)}
JSON_TEXT_VALUES = {
    "nan": '{"x": NaN}',
    "infinity": '{"x": -Infinity}',
    "overflow": '{"x": 1e400}',
    "deep": "[" * 3000,
    "lone surrogate": '{"x": "\\ud800"}',
}


def _named(error, field: Field) -> bool:
    return field.name in error["fields"] if field.name else bool(error["fields"])


@pytest.mark.crosscheck
@pytest.mark.parametrize("kind", JSON_VALUES)
@pytest.mark.parametrize("field", [f for f in FIELDS if f.kind == "json"], ids=str)
def test_a_json_field_refuses_infinity_and_deep_nesting(everything, field, kind):
    before = stored_everything()
    error = assert_error(request_with(everything, field, None, raw=JSON_VALUES[kind]), 400, "invalid")
    assert _named(error, field), error
    assert stored_everything() == before


@pytest.mark.parametrize("kind", JSON_TEXT_VALUES)
@pytest.mark.parametrize("field", [f for f in FIELDS if f.kind == "json-text"], ids=str)
def test_a_json_text_field_refuses_nan_infinity_lone_surrogates_and_deep_nesting(everything, field, kind):
    before = stored_everything()
    error = assert_error(request_with(everything, field, JSON_TEXT_VALUES[kind]), 400, "invalid")
    assert _named(error, field), error
    assert stored_everything() == before


# --- Every route: a path whose escapes are not UTF-8 is refused ---------------------------------

PINNED = {"user_id": "u1", "session_id": "s1", "key": "email", "round_id": "1", "app_name": "app"}
ROUTES_WITH_IDS = [name for name in operations() if re.search(r"\{(?!round_id\})", name)]


@pytest.fixture
def compliance_api(everything, tenant):
    """A client whose key may call every route (a compliance key may do what an agent key may)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name='c', scope='compliance')[1]}")
    return client


@pytest.mark.crosscheck
@pytest.mark.parametrize("operation", ROUTES_WITH_IDS)
def test_a_path_id_that_is_not_utf8_is_400_on_every_route(compliance_api, operation):
    method, template = operation.split(" ", 1)
    broken = re.search(r"\{(?!round_id\})([^}]+)\}", template).group(1)
    url = template.replace("{" + broken + "}", "%ED%A0%80").format(**PINNED)
    body = GOOD_REQUESTS.get(operation, (None, {}))[1]
    error = refused(compliance_api, method, url, body, 400, "invalid", "path")
    assert "UTF-8" in error["message"]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_under_asgi_the_path_is_judged_by_the_bytes_sent(agent_key):
    """An ASGI server decodes the path itself (uvicorn: U+FFFD for each bad byte); its raw_path
    still holds what was sent."""

    async def status_of(raw_path: bytes, path: str) -> int:
        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "raw_path": raw_path,
            "query_string": b"",
            "headers": [(b"authorization", f"Api-Key {agent_key}".encode()), (b"host", b"testserver")],
        }
        communicator = ApplicationCommunicator(get_asgi_application(), scope)
        await communicator.send_input({"type": "http.request", "body": b""})
        start = await communicator.receive_output(timeout=10)
        await communicator.receive_output(timeout=10)
        return start["status"]

    assert await status_of(b"/api/v1/users/%ED%A0%80/data/", "/api/v1/users/\ufffd\ufffd\ufffd/data/") == 400
    assert await status_of(b"/api/v1/users/%C3%A9/data/", "/api/v1/users/\u00e9/data/") == 200
