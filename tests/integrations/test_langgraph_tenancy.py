"""The LangGraph endpoints across tenants and with bad input: another tenant's key reaches
nothing of ours (the same thread id is another thread there), a missing key is a 401, and bad
input is a 400 naming the field that changes nothing."""

import base64

import pytest
from rest_framework.test import APIClient

from agentstate.tenancy.services import api_key_create
from backends.langgraph import urls
from backends.langgraph.process import services
from backends.langgraph.process.models import LangGraphCheckpoint, LangGraphThread, LangGraphWrite
from tests.api.routes import api_routes

pytestmark = pytest.mark.django_db
L = "/api/v1/langgraph/"
VALUE = {"type": "msgpack", "data": base64.b64encode(b"\x81\xa1k\xa1v").decode()}
PUT = {
    "thread_id": "t1",
    "default_user_id": "u1",
    "checkpoint_ns": "",
    "checkpoint_id": "c2",
    "parent_checkpoint_id": "c1",
    "checkpoint": VALUE,
    "metadata": {"step": 1, "run_id": "r1"},
    "channel_versions": {},
}
WRITES = {
    "thread_id": "t1",
    "default_user_id": "u1",
    "checkpoint_ns": "",
    "checkpoint_id": "c1",
    "task_id": "x",
    "writes": [{"idx": 0, "channel": "ch", "value": VALUE}],
}
NOT_FOUND, EMPTY, OWN, NOTHING = "404", "empty list", "own tenant", "changes nothing"

# (route name, method, path, body, what the other tenant gets)
CASES = [
    ("langgraph-checkpoint-list", "get", L + "checkpoints/?thread_id=t1", None, EMPTY),
    ("langgraph-checkpoint-list", "post", L + "checkpoints/", PUT, OWN),
    ("langgraph-checkpoint", "get", L + "checkpoint/?thread_id=t1&checkpoint_ns=", None, NOT_FOUND),
    ("langgraph-writes", "post", L + "writes/", WRITES, OWN),
    (
        "langgraph-batch",
        "post",
        L + "batch/",
        {"calls": [{"path": "checkpoints", "body": PUT}, {"path": "writes", "body": WRITES}]},
        OWN,
    ),
    ("langgraph-thread-delete", "post", L + "threads/delete/", {"thread_id": "t1"}, NOTHING),
    (
        "langgraph-thread-copy",
        "post",
        L + "threads/copy/",
        {"source_thread_id": "t1", "target_thread_id": "t9"},
        NOTHING,
    ),
    ("langgraph-prune", "post", L + "threads/prune/", {"thread_ids": ["t1"], "strategy": "delete"}, NOTHING),
    ("langgraph-runs-delete", "post", L + "runs/delete/", {"run_ids": ["r1"]}, NOTHING),
]


@pytest.fixture
def victim(tenant):
    services.checkpoint_put(
        tenant=tenant, **{**PUT, "checkpoint_id": "c1", "parent_checkpoint_id": None, "user_id": None}
    )
    services.writes_put(tenant=tenant, user_id=None, task_path="", replace=False, **WRITES)
    return tenant


def api(tenant):
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(tenant=tenant, name="k")[1])
    return client


def snapshot(tenant):
    return (
        list(LangGraphThread.objects.filter(tenant=tenant).values_list("thread_id", "user_id")),
        list(LangGraphCheckpoint.objects.filter(tenant=tenant).values_list("checkpoint_id", "metadata")),
        list(LangGraphWrite.objects.filter(tenant=tenant).values_list("checkpoint_id", "task_id", "channel")),
    )


def test_the_table_covers_every_langgraph_endpoint_and_method():
    routes = {
        (p.name, m)
        for _, p in api_routes(urls.urlpatterns)
        for m in p.callback.view_class.http_method_names
        if m not in ("head", "options") and hasattr(p.callback.view_class, m)
    }
    assert routes == {(name, method) for name, method, *_ in CASES}


@pytest.mark.parametrize("name, method, path, body, expected", CASES, ids=[f"{c[1]} {c[0]}" for c in CASES])
def test_other_tenant_reaches_nothing(victim, other_tenant, name, method, path, body, expected):
    before = snapshot(victim)
    client = api(other_tenant)
    response = client.post(path, body, format="json") if method == "post" else client.get(path)
    if expected == NOT_FOUND:
        assert response.status_code == 404
    elif expected == EMPTY:
        assert response.status_code == 200 and response.json()["results"] == []
    else:
        assert response.status_code in (200, 201, 204), response.content
    if expected == OWN:  # the same thread id is the other tenant's own thread
        assert LangGraphThread.objects.filter(tenant=other_tenant, thread_id="t1").exists()
    assert snapshot(victim) == before


@pytest.mark.parametrize("name, method, path, body, expected", CASES, ids=[f"{c[1]} {c[0]}" for c in CASES])
def test_a_missing_key_is_refused(victim, name, method, path, body, expected):
    before = snapshot(victim)
    response = getattr(APIClient(), method)(path, body, format="json")
    assert response.status_code == 401
    assert snapshot(victim) == before


@pytest.mark.parametrize(
    "path, body, field",
    [
        ("checkpoints/", {**PUT, "thread_id": "nul\x00"}, "thread_id"),
        ("checkpoints/", {**PUT, "thread_id": ""}, "thread_id"),
        ("checkpoints/", {**PUT, "checkpoint_id": "x" * 256}, "checkpoint_id"),
        ("checkpoints/", {**PUT, "checkpoint_ns": "n" * 2001}, "checkpoint_ns"),
        ("checkpoints/", {**PUT, "checkpoint": {**VALUE, "data": "not base64!"}}, "checkpoint"),
        ("checkpoints/", {**PUT, "metadata": ["not", "an", "object"]}, "metadata"),
        ("checkpoints/", {**PUT, "user_id": "someone/else"}, "user_id"),
        ("checkpoints/", {**PUT, "extra": 1}, "extra"),
        ("writes/", {**WRITES, "writes": [{"idx": "0", "channel": "ch", "value": VALUE}]}, "writes"),
        ("writes/", {**WRITES, "writes": [{"idx": 2**40, "channel": "ch", "value": VALUE}]}, "writes"),
        ("batch/", {"calls": []}, "calls"),
        ("batch/", {"calls": [{"path": "threads/delete", "body": {"thread_id": "t1"}}]}, "calls[0].path"),
        ("threads/prune/", {"thread_ids": ["t1"], "strategy": "everything"}, "strategy"),
        ("runs/delete/", {"run_ids": "r1"}, "run_ids"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(victim, path, body, field):
    before = snapshot(victim)
    response = api(victim).post(L + path, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert snapshot(victim) == before


def test_a_bad_filter_or_cursor_is_a_400(victim):
    client = api(victim)
    assert client.get(L + "checkpoints/", {"thread_id": "t1", "filter": "{not json"}).status_code == 400
    assert client.get(L + "checkpoints/", {"thread_id": "t1", "cursor": "forged"}).status_code == 400
