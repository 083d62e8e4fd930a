"""Schemathesis over the whole OpenAPI schema, in process through the WSGI app with a real API
key: no response is a 5xx and every response matches the schema (status code, content type,
body, headers). Deterministic (derandomized), about 20 examples per operation and run twice: with
the ids hypothesis invents (validation paths) and pinned to an existing session (the rules)."""
import json

import pytest
import schemathesis
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from schemathesis import checks

from sessions_app import services
from sessions_app.models import Session
from userdata_app import services as userdata_services

RAW_SCHEMA = json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))
schema = schemathesis.openapi.from_dict(RAW_SCHEMA)
schema.app = WSGIHandler()

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
        HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
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
    headers = {name: value for name, value in (case.headers or {}).items()
               if name.lower() not in ("authorization", "x-api-key")}
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
