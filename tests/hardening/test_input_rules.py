"""Every field of every endpoint reaches its rule; each rule against the whole table of edge
values is test_validators.py's part, so here each (endpoint, field) pair the OpenAPI schema lists
gets one value per class of bad input, not every value:

- string fields: ASCII and Unicode whitespace at both ends (stored exactly as sent, but for the
  ids of sessions being made, which are stripped by design), and a NUL with a lone surrogate (a
  4xx, or stored: never a 5xx);
- identifiers in bodies and in paths: too long, a control character, a lone surrogate (in a path:
  an escape that is not UTF-8);
- JSON fields: a number past a float's range, a lone surrogate, deep nesting; JSON carried as text
  also NaN; every body: malformed JSON of each kind and nesting deep enough to exhaust the parser;
- query parameters: cursors, page sizes and datetimes.

Each refusal is a 400 in the one error shape naming the field, and nothing stored changes. A new
endpoint is covered once it has a good request in ``GOOD_REQUESTS``; a test fails until it has.
Last, each rule is swapped for one that accepts everything, and its pair check must then fail: a
check that cannot fail proves nothing."""

from __future__ import annotations

import copy
import json
import re
import sys
from collections.abc import Callable
from urllib.parse import quote

import pytest
from asgiref.testing import ApplicationCommunicator
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.urls import resolve
from rest_framework import pagination as drf_pagination
from rest_framework.test import APIClient

from agentstate import validation
from agentstate.api import pagination, views
from agentstate.tenancy.services import api_key_create
from agentstate.validation import IDENTIFIER_MAX_LENGTH, MAX_BODY_DEPTH, MAX_JSON_DEPTH
from backends.langgraph.process import services as langgraph_services
from tests.api.assertions import assert_error
from tests.hardening.openapi import Field, operations, request_fields
from tests.hardening.stored import stored_everything
from tests.hardening.writes import WRITES, send

# --- Every field of every endpoint reaches its validator ----------------------------------------

S = "/api/v1/users/u1/sessions/s1/"
ADK = "/api/v1/adk/apps/app/users/u1/sessions/"
LANGGRAPH_THREAD = {"thread_id": "t1", "default_user_id": "u1", "checkpoint_ns": "", "checkpoint_id": "c1"}
TYPED_VALUE = {"type": "json", "data": "e30="}

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
    "post /api/v1/langgraph/batch/": (
        "/api/v1/langgraph/batch/",
        {"calls": [{"path": "checkpoints", "body": {**LANGGRAPH_THREAD, "checkpoint_id": "c3"}}]},
    ),
    "post /api/v1/store/batch/": (
        "/api/v1/store/batch/",
        {"ops": [{"op": "put", "namespace": ["users", "u1", "prefs"], "key": "k", "value": {"a": 1}}]},
    ),
    "post /api/v1/langgraph/runs/delete/": ("/api/v1/langgraph/runs/delete/", {"run_ids": ["r1"]}),
    "post /api/v1/langgraph/threads/copy/": (
        "/api/v1/langgraph/threads/copy/",
        {"source_thread_id": "t1", "target_thread_id": "t2"},
    ),
    "post /api/v1/langgraph/threads/delete/": ("/api/v1/langgraph/threads/delete/", {"thread_id": "t1"}),
    "post /api/v1/langgraph/threads/prune/": ("/api/v1/langgraph/threads/prune/", {"thread_ids": ["t1"]}),
    "post /api/v1/users/{user_id}/sessions/{session_id}/fork/": (S + "fork/", {"new_session_id": "f1"}),
    "post /api/v1/users/{user_id}/sessions/{session_id}/messages/pop/": (S + "messages/pop/", {"idempotency_key": "k"}),
    "post /api/v1/adk/apps/{app_name}/users/{user_id}/artifacts/": (
        "/api/v1/adk/apps/app/users/u1/artifacts/",
        {"filename": "note.txt", "session_id": "a1", "artifact": {"text": "hi"}, "custom_metadata": {"k": 1}},
    ),
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


def field_of(operation: str, name: str) -> Field:
    return next(f for f in FIELDS if f.operation == operation and f.name == name)


@pytest.fixture
def everything(api, full_session):
    """full_session, an ADK session app/u1/a1 with an event, and a LangGraph thread t1."""
    import backends.adk  # noqa: F401 (it writes through its API: left out, the test skips)

    assert api.post(ADK, {"session_id": "a1"}, format="json").status_code == 201
    event = json.dumps({"id": "e1", "timestamp": 1.0, "author": "user"})
    assert api.post(ADK + "a1/events/", {"event": event}, format="json").status_code == 201
    body = {**LANGGRAPH_THREAD, "checkpoint": TYPED_VALUE, "metadata": {"step": 1}, "channel_versions": {}}
    assert api.post("/api/v1/langgraph/checkpoints/", body, format="json").status_code == 201
    return api


@pytest.mark.needs_backends("adk")
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


def assert_refused(api, field: str | tuple[str, ...] | None, send_it: Callable[[], object]):
    """``send_it()`` is a 400 naming ``field`` (one of them, if several; any field for ``""``, the
    whole body; none needed for None), and nothing stored changed."""
    before = stored_everything()
    error = assert_error(send_it(), 400, "invalid")
    if field == "":
        assert error["fields"], error
    elif field is not None:
        names = (field,) if isinstance(field, str) else field
        assert set(error["fields"]) & set(names), error
    assert stored_everything() == before
    return error


MARK = "edgemark"
SPACED = f" \u00a0{MARK}\u2003 "


def check_string_field(api, field: Field) -> None:
    """Spaces kept as sent (or refused), and a NUL with a lone surrogate refused or stored: no 5xx."""
    before = stored_everything()
    response = request_with(api, field, SPACED)
    assert_answered(response)
    if response.status_code >= 400:
        assert stored_everything() == before
    else:
        stored = json.dumps(stored_everything(), default=str)  # ASCII: "\u00a0" is spelled out
        exact = len(re.findall(rf" \\+u00a0{MARK}\\+u2003 ", stored))
        if str(field) in STRIPPED:
            assert stored.count(MARK) > 0 and exact == 0, "stored as sent, not stripped"
        else:
            assert stored.count(MARK) == exact, "stored trimmed or normalised"
    before = stored_everything()
    response = request_with(api, field, "a\x00\ud800b")
    assert_answered(response)
    if response.status_code >= 400:
        assert stored_everything() == before


@pytest.mark.crosscheck  # every (endpoint, field) pair: the full suite's, not the quick loop's
@pytest.mark.parametrize("field", [f for f in FIELDS if f.kind == "string"], ids=str)
def test_a_string_field_stores_its_value_exactly_as_sent_or_refuses_it_never_a_5xx(everything, field):
    check_string_field(everything, field)


def nested(levels: int, leaf: str = "{}") -> str:
    return '{"d":' * levels + leaf + "}" * levels


JSON_VALUES = {
    "overflow": '{"x": 1e400}',
    "lone surrogate": '{"x": ["\\ud800"]}',
    "deep": nested(MAX_JSON_DEPTH + 5),  # past the document's limit, within the body's
}
JSON_TEXT_VALUES = {
    "nan": '{"x": NaN}',
    "overflow": '{"x": 1e400}',
    "lone surrogate": '{"x": "\\ud800"}',
    "deep": "[" * 3000,
}


def check_json_field(api, field: Field, kind: str) -> None:
    if field.kind == "json":
        send_it = lambda: request_with(api, field, None, raw=JSON_VALUES[kind])  # noqa: E731
    else:
        send_it = lambda: request_with(api, field, JSON_TEXT_VALUES[kind])  # noqa: E731
    assert_refused(api, field.name, send_it)


@pytest.mark.crosscheck  # every (endpoint, field) pair: the full suite's, not the quick loop's
@pytest.mark.parametrize("field", [f for f in FIELDS if f.kind == "json"], ids=str)
def test_a_json_field_refuses_infinity_lone_surrogates_and_deep_nesting(everything, field):
    for kind in JSON_VALUES:
        check_json_field(everything, field, kind)


@pytest.mark.crosscheck  # every (endpoint, field) pair: the full suite's, not the quick loop's
@pytest.mark.parametrize("field", [f for f in FIELDS if f.kind == "json-text"], ids=str)
def test_a_json_text_field_refuses_nan_infinity_lone_surrogates_and_deep_nesting(everything, field):
    for kind in JSON_TEXT_VALUES:
        check_json_field(everything, field, kind)


# Identifiers sent in bodies (path ids: below), each named as the API's errors name it. The schema
# does not tell an identifier from free text; a string field not listed here is still checked above.
IDENTIFIER_FIELDS = {
    "post /api/v1/sessions/": ["user_id", "session_id", "agent_id", "workspace_id"],
    "patch /api/v1/users/{user_id}/sessions/{session_id}/": ["agent_id", "workspace_id"],
    "post /api/v1/users/{user_id}/sessions/{session_id}/messages/": ["messages[0].client_id"],
    "post /api/v1/users/{user_id}/sessions/{session_id}/checkpoints/": ["label"],
    "post /api/v1/users/{user_id}/sessions/{session_id}/transitions/": ["to_agent", "from_agent"],
    "post /api/v1/users/{user_id}/sessions/{session_id}/fork/": ["new_session_id"],
    "post /api/v1/adk/apps/{app_name}/users/{user_id}/sessions/": ["session_id"],
}
BAD_IDENTIFIERS = {"too long": "x" * (IDENTIFIER_MAX_LENGTH + 1), "control": "a\tb", "lone surrogate": "\ud800"}
IDENTIFIER_PAIRS = [
    field_of(operation, name)
    for operation, names in IDENTIFIER_FIELDS.items()
    if "/adk/" not in operation or "adk" in settings.BACKENDS_INSTALLED  # a left-out backend has no API
    for name in names
]


def check_identifier_field(api, field: Field, kind: str) -> None:
    assert_refused(api, field.name, lambda: request_with(api, field, BAD_IDENTIFIERS[kind]))


@pytest.mark.crosscheck  # every (endpoint, field) pair: the full suite's, not the quick loop's
@pytest.mark.parametrize("field", IDENTIFIER_PAIRS, ids=str)
def test_an_identifier_in_a_body_refuses_each_kind_of_bad_id(everything, field):
    for kind in BAD_IDENTIFIERS:
        check_identifier_field(everything, field, kind)


def test_the_keys_of_working_state_are_identifiers(everything):
    for bad in BAD_IDENTIFIERS.values():
        assert_refused(
            everything, "working_state", lambda bad=bad: send(everything, "patch", S + "working-state/", {bad: 1})
        )


# LangGraph's ids are any text a database can hold, as its client maps them (clean_text): no NUL,
# no lone surrogate.
BAD_LANGGRAPH_TEXT = {"NUL": "a\x00b", "lone surrogate": "\ud800"}
LANGGRAPH_TEXT_PAIRS = [f for f in FIELDS if f.kind == "string" and "/langgraph/" in f.operation]


def check_langgraph_text(api, field: Field, kind: str) -> None:
    names = (field.name, str(field.path[0]))  # a list's item may be named by the list
    assert_refused(api, names, lambda: request_with(api, field, BAD_LANGGRAPH_TEXT[kind]))


def check_langgraph_id_length(api) -> None:
    too_long = "x" * (langgraph_services.MAX_ID_BYTES + 1)
    assert_refused(api, "checkpoint_id", lambda: request_with(api, field_of(LANGGRAPH_PUT, "checkpoint_id"), too_long))


@pytest.mark.crosscheck  # every (endpoint, field) pair: the full suite's, not the quick loop's
@pytest.mark.parametrize("field", LANGGRAPH_TEXT_PAIRS, ids=str)
def test_a_langgraph_id_refuses_nul_and_lone_surrogates(everything, field):
    for kind in BAD_LANGGRAPH_TEXT:
        check_langgraph_text(everything, field, kind)


def test_a_langgraph_checkpoint_id_past_its_bytes_is_refused(everything):
    check_langgraph_id_length(everything)


# Every body any operation takes: malformed of each kind, or nesting deep enough that the parser
# ran out of stack (a 500, issue 9 defect 6: 950 levels are under 2 KB).
MALFORMED_BODIES = {
    "syntax": '{"a": 1,}',
    "empty": "",
    "nan": '{"a": NaN}',
    "lone surrogate": '{"a": "\\ud800"}',
    "deep": "[" * 950 + "]" * 950,
}
BODY_OPERATIONS = [name for name, operation in operations().items() if "requestBody" in operation]


def check_body(api, operation: str, kind: str) -> None:
    method, url = operation.split(" ", 1)[0], url_of(operation)
    body = MALFORMED_BODIES[kind]
    error = assert_refused(api, "body" if kind == "deep" else None, lambda: send(api, method, url, body))
    if kind == "deep":
        assert str(MAX_BODY_DEPTH) in error["message"]


@pytest.mark.crosscheck  # every (endpoint, field) pair: the full suite's, not the quick loop's
@pytest.mark.parametrize("operation", BODY_OPERATIONS)
def test_every_body_refuses_each_kind_of_malformed_json(everything, operation):
    body_required = resolve(url_of(operation)).func.view_class.body_required
    for kind in MALFORMED_BODIES:
        if kind != "empty" or body_required:  # a fork or a pop without a body takes the defaults
            check_body(everything, operation, kind)


# --- Query parameters and path ids, from the schema ---------------------------------------------

PINNED = {"user_id": "u1", "session_id": "s1", "key": "email", "round_id": "1", "app_name": "app"}


def url_of(operation: str, **ids: str) -> str:
    """The operation's path with existing ids (ADK's session is a1), ``ids`` in their place."""
    template = operation.split(" ", 1)[1]
    pinned = {**PINNED, "session_id": "a1"} if "/adk/" in template else PINNED
    return template.format(**{**pinned, **{name: quote(value, safe="%") for name, value in ids.items()}})


def query_parameters(test: Callable[[dict], bool]) -> list[tuple[str, str]]:
    return [
        (name, parameter["name"])
        for name, operation in operations().items()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "query" and test(parameter)
    ]


BAD_QUERY_VALUES = {
    "cursor": {"decodes to nothing": "AAAA", "not base64": "not base64!"},
    "page_size": {"zero": "0", "not a number": "abc", "past the largest": "100000"},
    # 9999-12-31T23:59:59-01:00 overflowed on SQLite (a 500, issue 9 defect 6).
    "date-time": {"only with its offset": "9999-12-31T23:59:59-01:00", "offset of a day": "2026-01-01T00:00:00+24:00"},
}
QUERY_PAIRS = query_parameters(lambda p: p["name"] in ("cursor", "page_size")) + query_parameters(
    lambda p: p.get("schema", {}).get("format") == "date-time"
)


def check_query(api, operation: str, parameter: str, kind: str) -> None:
    rule = parameter if parameter in BAD_QUERY_VALUES else "date-time"
    query = {**needed_query(operation), parameter: BAD_QUERY_VALUES[rule][kind]}
    assert_refused(api, parameter, lambda: api.get(url_of(operation), query))


def needed_query(operation: str) -> dict[str, str]:
    """``user_id`` where the operation takes it: some filters are refused without it, whatever
    their value, and the check must reach the value's rule."""
    names = {parameter["name"] for parameter in operations()[operation].get("parameters", [])}
    return {"user_id": "u1"} if "user_id" in names else {}


@pytest.mark.crosscheck  # every (endpoint, field) pair: the full suite's, not the quick loop's
@pytest.mark.parametrize("operation, parameter", QUERY_PAIRS, ids=[f"{o} ?{p}" for o, p in QUERY_PAIRS])
def test_a_query_parameter_refuses_each_kind_of_bad_value(everything, operation, parameter):
    for kind in BAD_QUERY_VALUES[parameter if parameter in BAD_QUERY_VALUES else "date-time"]:
        check_query(everything, operation, parameter, kind)


def test_the_query_parameters_with_rules_are_found():
    found = {parameter for _, parameter in QUERY_PAIRS}
    assert {"cursor", "page_size", "created_after", "updated_before"} <= found


BAD_PATH_IDS = {"too long": "x" * (IDENTIFIER_MAX_LENGTH + 1), "control": "a\tb", "not UTF-8": "%ED%A0%80"}
PATH_PAIRS = [
    (name, parameter)
    for name, operation in operations().items()
    for parameter in re.findall(r"\{([^}]+)\}", name)
    if parameter != "round_id"
]


@pytest.fixture
def compliance_api(everything, tenant):
    """A client whose key may call every route (a compliance key may do what an agent key may)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name='c', scope='compliance')[1]}")
    return client


def check_path_id(api, operation: str, parameter: str, kind: str) -> None:
    method = operation.split(" ", 1)[0]
    body = GOOD_REQUESTS.get(operation, (None, {}))[1]
    url = url_of(operation, **{parameter: BAD_PATH_IDS[kind]})
    named = "path" if kind == "not UTF-8" else parameter
    error = assert_refused(api, named, lambda: send(api, method, url, body))
    if kind == "not UTF-8":
        assert "UTF-8" in error["message"]


@pytest.mark.crosscheck  # every (endpoint, field) pair: the full suite's, not the quick loop's
@pytest.mark.parametrize("operation, parameter", PATH_PAIRS, ids=[f"{o} {{{p}}}" for o, p in PATH_PAIRS])
def test_a_path_id_refuses_each_kind_of_bad_id(compliance_api, operation, parameter):
    for kind in BAD_PATH_IDS:
        check_path_id(compliance_api, operation, parameter, kind)


def check_round_id_in_path(api, operation: str) -> None:
    method = operation.split(" ", 1)[0]
    url = url_of(operation, round_id=str(validation.ROUND_ID_MAX + 1))
    assert_refused(api, "round_id", lambda: send(api, method, url, {"state": {}}))


@pytest.mark.crosscheck  # every (endpoint, field) pair: the full suite's, not the quick loop's
@pytest.mark.parametrize("operation", [name for name in operations() if "{round_id}" in name])
def test_a_round_id_in_a_path_beyond_32_bits_is_refused(everything, operation):
    check_round_id_in_path(everything, operation)


def check_event_timestamp(api) -> None:
    """ADK's event is JSON text; its timestamp must be one a datetime can hold."""
    event = json.dumps({"id": "e9", "timestamp": 1e300, "author": "user"})
    assert_refused(api, "event.timestamp", lambda: send(api, "post", ADK + "a1/events/", {"event": event}))


def test_an_event_timestamp_no_datetime_can_hold_is_refused(everything):
    check_event_timestamp(everything)


# --- Each rule swapped for one that accepts everything: its pair check fails --------------------


def accept(value, *args, **kwargs):
    return value


def accept_nothing_checked(*args, **kwargs) -> None:
    return None


def json_loads_anything(text, *, field):
    return json.loads(text)


LANGGRAPH_PUT = "post /api/v1/langgraph/checkpoints/"
ADK_CREATE = "post /api/v1/adk/apps/{app_name}/users/{user_id}/sessions/"
ROUNDS = "post /api/v1/users/{user_id}/sessions/{session_id}/rounds/"
SESSIONS = "get /api/v1/sessions/"
USER_DATA = "get /api/v1/users/{user_id}/data/"
# A rule's name: (the module defining it, what accepts everything in its place, a check it must fail).
MUTANTS = {
    "clean_identifier": (
        validation,
        accept,
        lambda api: check_identifier_field(api, field_of("post /api/v1/sessions/", "user_id"), "too long"),
    ),
    "clean_optional_label": (
        validation,
        lambda value, **kwargs: value or "",
        lambda api: check_identifier_field(api, field_of("post /api/v1/sessions/", "agent_id"), "control"),
    ),
    "clean_json": (validation, accept, lambda api: check_json_field(api, field_of(ROUNDS, "state"), "deep")),
    "parse_json_text": (
        validation,
        json_loads_anything,
        lambda api: check_json_field(api, field_of(ADK_CREATE, "state"), "nan"),
    ),
    "check_json_text_depth": (validation, accept_nothing_checked, lambda api: check_body(api, ROUNDS, "deep")),
    "clean_round_id": (
        validation,
        accept,
        lambda api: check_round_id_in_path(api, "put /api/v1/users/{user_id}/sessions/{session_id}/rounds/{round_id}/"),
    ),
    "clean_timestamp": (validation, lambda value, **kwargs: float(value), check_event_timestamp),
    "clean_datetime": (
        validation,
        accept,
        lambda api: check_query(api, SESSIONS, "created_after", "only with its offset"),
    ),
    # DRF's string fields refuse NUL and lone surrogates first; only the length is LangGraph's own.
    "clean_text": (langgraph_services, accept, check_langgraph_id_length),
    "_path_is_utf8": (views, lambda request: True, lambda api: check_path_id(api, USER_DATA, "user_id", "not UTF-8")),
}
# Methods, swapped on their class for DRF's own (which is lenient where ours is strict).
METHOD_MUTANTS = {
    "decode_cursor": (lambda api: check_query(api, SESSIONS, "cursor", "decodes to nothing")),
    "get_page_size": (lambda api: check_query(api, USER_DATA, "page_size", "past the largest")),
}


def disable(monkeypatch, module, name: str, replacement) -> None:
    """Put ``replacement`` wherever callers look ``module.name`` up: its own module, every module
    that imported it by name, and the table of path cleaners."""
    original = getattr(module, name)
    for loaded in list(sys.modules.values()):
        if getattr(loaded, "__dict__", {}).get(name) is original:
            monkeypatch.setattr(loaded, name, replacement)
    for key, cleaner in views.PATH_CLEANERS.items():
        if cleaner is original:
            monkeypatch.setitem(views.PATH_CLEANERS, key, replacement)


@pytest.mark.parametrize("name", MUTANTS)
def test_each_rule_disabled_fails_its_pair_check(everything, monkeypatch, name):
    module, replacement, check = MUTANTS[name]
    check(everything)  # passes with the rule in place
    disable(monkeypatch, module, name, replacement)
    everything.raise_request_exception = False  # a 500 is an answer here, not an exception
    with pytest.raises(AssertionError):
        check(everything)


@pytest.mark.parametrize("name", METHOD_MUTANTS)
def test_each_query_rule_disabled_fails_its_pair_check(everything, monkeypatch, name):
    check = METHOD_MUTANTS[name]
    check(everything)
    monkeypatch.setattr(pagination.CursorPagination, name, getattr(drf_pagination.CursorPagination, name))
    with pytest.raises(AssertionError):
        check(everything)


def test_every_rule_of_the_validation_module_has_a_mutant():
    """A new rule in agentstate/validation.py gets a mutant here (or a reason it has none)."""
    rules = {name for name in vars(validation) if name.startswith(("clean_", "parse_", "check_"))}
    assert rules <= MUTANTS.keys()


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
