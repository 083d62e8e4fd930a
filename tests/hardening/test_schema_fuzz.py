"""Schemathesis over the whole OpenAPI schema, in process through the WSGI app with a real API
key: no response is a 5xx and every response matches the schema (status code, content type,
body, headers). Deterministic (derandomized), about 20 examples per operation and run twice: with
the ids hypothesis invents (validation paths) and pinned to an existing session (the rules).

Beyond what the schema describes, the examples include the inputs that once reached a 500: JSON
bodies nesting hundreds of levels deep, datetimes at the ends of the calendar with any offset
under 24 hours (and a few malformed ones), and forged or garbled pagination cursors."""

import base64
import copy
import json
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

import pytest
import schemathesis
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import checks

from agentstate.api.renderers import MsgpackRenderer
from sessions_app import services
from sessions_app.models import Session
from tests.hardening.openapi import api_schema
from userdata_app import services as userdata_services

pytestmark = pytest.mark.fuzz

# --- Inputs of the kind that reached a 500 --------------------------------------------------

OFFSETS = st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(lambda minutes: timezone(timedelta(minutes=minutes)))
DATETIMES = st.one_of(
    st.sampled_from(
        [
            "9999-12-31T23:59:59-01:00",
            "9999-12-31T23:59:59.999999+23:59",
            "0001-01-01T00:00:00+01:00",
            "0001-01-01T00:00:00-23:59",
            "2026-01-01T00:00:00-20:00",
            "2026-01-01T00:00:00+24:00",
            "0000-01-01T00:00:00Z",
        ]
    ),
    st.builds(
        lambda moment, offset: moment.replace(tzinfo=offset).isoformat(),
        # Hypothesis takes naive bounds; the offset is attached above.
        st.one_of(
            st.datetimes(max_value=datetime(1, 1, 2)),  # noqa: DTZ001
            st.datetimes(min_value=datetime(9999, 12, 30)),  # noqa: DTZ001
            st.datetimes(),
        ),
        OFFSETS,
    ),
)
POSITIONS = st.one_of(DATETIMES, st.integers(-(2**70), 2**70).map(str), st.text(max_size=40))
FORGED_CURSORS = st.builds(
    lambda position, reverse, offset: base64.b64encode(
        urlencode({"p": position, **({"r": "1"} if reverse else {}), **({"o": offset} if offset else {})}).encode()
    ).decode(),
    POSITIONS,
    st.booleans(),
    st.one_of(st.none(), st.integers(-5, 10**6).map(str)),
)
CURSORS = st.one_of(
    FORGED_CURSORS, st.text(max_size=60), st.binary(max_size=40).map(lambda raw: base64.b64encode(raw).decode())
)
schemathesis.openapi.format("date-time", DATETIMES)
schemathesis.openapi.format("agentstate-cursor", CURSORS)


_PLACEHOLDER = "agentstate-fuzz-nested"


def deepened(body, levels: int) -> bytes:
    """``body`` as JSON text with one of its values (or itself) replaced by arrays nested
    ``levels`` deep, written out as text: the client's own encoder would run out of stack first."""
    body = {**body, sorted(body)[levels % len(body)]: _PLACEHOLDER} if isinstance(body, dict) and body else _PLACEHOLDER
    return json.dumps(body).replace(json.dumps(_PLACEHOLDER), "[" * levels + "]" * levels).encode()


def with_cursor_format(raw: dict) -> dict:
    """The schema says a cursor is a string; the fuzzer should send ones that look like ours."""
    for path in raw["paths"].values():
        for operation in path.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("name") == "cursor" and parameter.get("in") == "query":
                    parameter["schema"] = {"type": "string", "format": "agentstate-cursor"}
    return raw


@schemathesis.serializer("application/msgpack")
def to_msgpack(context, value) -> bytes:
    """The LangGraph writes' second body format, encoded as our renderer encodes it (an integer past
    64 bits as its extension type); a body already in bytes (``deepened``) is sent as it is."""
    return value if isinstance(value, bytes) else MsgpackRenderer().render(value)


RAW_SCHEMA = with_cursor_format(copy.deepcopy(api_schema()))
schema = schemathesis.openapi.from_dict(RAW_SCHEMA)
schema.app = WSGIHandler()


@schema.hook
def flatmap_body(context, body):
    """One body in four nests 33 to 3,000 levels deep: past the document limit (32), past the body
    limit (64), and past the depth where the JSON parser exhausts Python's stack (about 950)."""
    return st.integers(0, 3).flatmap(
        lambda choice: (
            st.integers(33, 3000).map(lambda levels: deepened(body, levels)) if choice == 0 else st.just(body)
        )
    )


CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
]
FUZZ = settings(
    max_examples=20,
    derandomize=True,
    database=None,
    deadline=None,
    # The key and tenant fixtures are meant to be shared by every example of an operation.
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@pytest.fixture(autouse=True)
def _keep_the_test_transaction_open():
    """Like Django's test client: a request's end must not close the connection that holds the
    test's transaction (schemathesis calls the plain WSGI handler)."""
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (signals.request_started, signals.request_finished):
        signal.connect(close_old_connections)


def call(case, key: str):
    """Send the case with our key in place of the security headers schemathesis invents."""
    headers = {
        name: value
        for name, value in (case.headers or {}).items()
        if name.lower() not in ("authorization", "x-api-key")
    }
    case.headers = {**headers, "Authorization": f"Api-Key {key}"}
    case.call_and_validate(checks=CHECKS)


def test_the_fuzzed_schema_has_the_history_edits():
    paths = set(RAW_SCHEMA["paths"])
    session = "/api/v1/users/{user_id}/sessions/{session_id}/"
    assert {session + p for p in ("messages/pop/", "messages/rewind/", "messages/clear/", "fork/")} <= paths


@pytest.mark.django_db
@schema.parametrize()
@FUZZ
def test_any_input_gets_a_documented_answer(case, agent_key):
    call(case, agent_key)


@pytest.mark.django_db
@schema.parametrize()
@FUZZ
def test_any_input_on_an_existing_session_gets_a_documented_answer(case, agent_key, tenant):
    ensure_session(tenant)  # again for each example: an earlier one may have deleted it
    pinned = {"user_id": "u1", "session_id": "s1", "round_id": 1, "key": "email"}
    for name in pinned.keys() & (case.path_parameters or {}).keys():
        case.path_parameters[name] = pinned[name]
    call(case, agent_key)


def ensure_session(tenant) -> None:
    existing = Session.objects.filter(tenant=tenant, user_id="u1", session_id="s1").first()
    if existing is not None:
        if existing.message_count == 0 and existing.ended_at is None:  # popped, rewound or cleared: refill
            services.message_append(session=existing, messages=[{"content": "again"}, {"content": "and again"}])
        return
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.message_append(session=session, messages=[{"content": "hi"}])
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"a": 1}, round_id=1)
    services.checkpoint_create(session=session, label="cp", state={"a": 1})
    userdata_services.user_datum_set(tenant=tenant, user_id="u1", key="email", value="a@example.com")
