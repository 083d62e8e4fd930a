"""Another tenant's key reaches nothing of ours: every endpoint and method answers 404 or an empty
list, writes that create land in the caller's own tenant, and our rows stay exactly as they were."""

import pytest

from sessions_app import services
from sessions_app.api import urls as session_urls
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
from userdata_app import services as userdata_services
from userdata_app.api import urls as userdata_urls
from userdata_app.models import UserDatum
from tests.api.routes import api_routes

pytestmark = pytest.mark.django_db
S = "/api/v1/users/u1/sessions/s1/"
NOT_FOUND, EMPTY, OWN = "404", "empty list", "own tenant"

# (route name, method, path, body, what the other tenant gets)
CASES = [
    ("session-list", "get", "/api/v1/sessions/", None, EMPTY),
    ("session-list", "post", "/api/v1/sessions/", {"user_id": "u1", "session_id": "s1"}, OWN),
    ("session-detail", "get", S, None, NOT_FOUND),
    ("session-detail", "patch", S, {"metadata": {"owned": True}}, NOT_FOUND),
    ("session-detail", "delete", S, None, NOT_FOUND),
    ("session-end", "post", S + "end/", None, NOT_FOUND),
    ("session-restore", "get", S + "restore/", None, NOT_FOUND),
    ("message-list", "get", S + "messages/", None, NOT_FOUND),
    ("message-list", "post", S + "messages/", {"content": "injected"}, NOT_FOUND),
    ("message-pop", "post", S + "messages/pop/", {"idempotency_key": "k"}, NOT_FOUND),
    ("message-rewind", "post", S + "messages/rewind/", {"after_seq": 0, "after_round": 0}, NOT_FOUND),
    ("message-clear", "post", S + "messages/clear/", None, NOT_FOUND),
    ("session-fork", "post", S + "fork/", {"new_session_id": "stolen"}, NOT_FOUND),
    ("round-list", "get", S + "rounds/", None, NOT_FOUND),
    ("round-list", "post", S + "rounds/", {"state": {"owned": True}, "round_id": 1}, OWN),
    ("round-latest", "get", S + "rounds/latest/", None, NOT_FOUND),
    ("round-detail", "get", S + "rounds/1/", None, NOT_FOUND),
    ("round-detail", "put", S + "rounds/1/", {"state": {"owned": True}}, OWN),
    ("round-detail", "delete", S + "rounds/1/", None, NOT_FOUND),
    ("checkpoint-list", "get", S + "checkpoints/", None, NOT_FOUND),
    ("checkpoint-list", "post", S + "checkpoints/", {"label": "cp"}, NOT_FOUND),
    ("checkpoint-latest", "get", S + "checkpoints/latest/?label=cp", None, NOT_FOUND),
    ("working-state", "get", S + "working-state/", None, NOT_FOUND),
    ("working-state", "put", S + "working-state/", {"owned": True}, NOT_FOUND),
    ("working-state", "patch", S + "working-state/", {"owned": True}, NOT_FOUND),
    ("working-state", "delete", S + "working-state/", None, NOT_FOUND),
    ("transition-list", "get", S + "transitions/", None, NOT_FOUND),
    ("transition-list", "post", S + "transitions/", {"to_agent": "evil"}, NOT_FOUND),
    ("user-data-list", "get", "/api/v1/users/u1/data/", None, EMPTY),
    ("user-datum", "get", "/api/v1/users/u1/data/email/", None, NOT_FOUND),
    ("user-datum", "put", "/api/v1/users/u1/data/email/", {"value": "evil@example.com"}, OWN),
    ("user-datum", "delete", "/api/v1/users/u1/data/email/", None, NOT_FOUND),
]


@pytest.fixture
def victim(tenant):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1", metadata={"mine": True})
    services.message_append(session=session, messages=[{"content": "secret"}])
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"mine": True})
    services.working_state_replace(session=session, data={"mine": True})
    services.checkpoint_create(session=session, label="cp")
    services.transition_record(session=session, to_agent="b")
    userdata_services.user_datum_set(tenant=tenant, user_id="u1", key="email", value="me@example.com")
    return session


def snapshot(tenant):
    from sessions_app import selectors

    session = Session.objects.get(tenant=tenant)  # a fork would be a second session
    return {
        "session": (session.metadata, session.ended_at, session.version, session.last_seq, session.history_generation),
        "messages": list(Message.objects.filter(tenant=tenant).values_list("seq", "content")),
        "rounds": list(Round.objects.filter(tenant=tenant).values_list("round_id", "state", "version")),
        "checkpoints": Checkpoint.objects.filter(tenant=tenant).count(),
        "transitions": AgentTransition.objects.filter(tenant=tenant).count(),
        "working_state": selectors.working_state_get(session=session),
        "user_data": list(UserDatum.objects.filter(tenant=tenant).values_list("key", "value")),
    }


def test_the_table_covers_every_endpoint_and_method():
    routes = set()
    for module in (session_urls, userdata_urls):
        for _, pattern in api_routes(module.urlpatterns):
            if pattern.name.startswith("langgraph-"):  # tests/integrations/test_langgraph_tenancy.py
                continue
            view = pattern.callback.view_class
            routes |= {
                (pattern.name, m) for m in view.http_method_names if m not in ("head", "options") and hasattr(view, m)
            }
    assert routes == {(name, method) for name, method, *_ in CASES}


@pytest.mark.parametrize("name, method, path, body, expected", CASES, ids=[f"{c[1]} {c[0]}" for c in CASES])
def test_other_tenant_reaches_nothing(victim, tenant, other_tenant, other_api, name, method, path, body, expected):
    before = snapshot(tenant)
    response = (
        getattr(other_api, method)(path, body, format="json") if body is not None else getattr(other_api, method)(path)
    )
    if expected == NOT_FOUND:
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "not_found"
    elif expected == EMPTY:
        assert response.status_code == 200 and response.json()["results"] == []
    else:  # created in the caller's own tenant, beside ours
        assert response.status_code in (200, 201), response.content
        assert "mine" not in str(response.json())
    assert snapshot(tenant) == before


@pytest.mark.parametrize(
    "credentials", [{}, {"HTTP_X_API_KEY": "abcdefgh.0123456789abcdef0123456789abcdef"}], ids=["no key", "bad key"]
)
@pytest.mark.parametrize("name, method, path, body, expected", CASES, ids=[f"{c[1]} {c[0]}" for c in CASES])
def test_every_endpoint_refuses_a_missing_or_bad_key(victim, tenant, credentials, name, method, path, body, expected):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(**credentials)
    before = snapshot(tenant)
    response = getattr(client, method)(path, body, format="json") if body is not None else getattr(client, method)(path)
    assert response.status_code == 401 and response.json()["error"]["code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == "Api-Key"
    assert snapshot(tenant) == before


PATH_CASES = [case for case in CASES if "/users/u1/" in case[2]]


@pytest.mark.parametrize("name, method, path, body, expected", PATH_CASES, ids=[f"{c[1]} {c[0]}" for c in PATH_CASES])
def test_every_endpoint_names_a_bad_identifier_in_its_path(victim, tenant, api, name, method, path, body, expected):
    before = snapshot(tenant)
    bad = path.replace("/users/u1/", "/users/u%01/")
    response = getattr(api, method)(bad, body, format="json") if body is not None else getattr(api, method)(bad)
    assert response.status_code == 400, response.content
    assert "user_id" in response.json()["error"]["fields"]
    assert snapshot(tenant) == before
