"""GET /api/v1/users/{user_id}/memories/search/: a user's memory items by any of the query's words,
tenant-scoped by the API key, ranked and paged by cursor, read on the primary as all user data;
bad queries are 400s naming the field, never a 500."""

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from tests.api.assertions import assert_error
from userdata_app.memory.services import memory_batch

pytestmark = pytest.mark.django_db
SEARCH = "/api/v1/users/u1/memories/search/"


def put(tenant, user_id: str, key: str, value: dict) -> None:
    memory_batch(
        tenant=tenant, ops=[{"op": "put", "namespace": ["users", user_id, "facts"], "key": key, "value": value}]
    )


@pytest.fixture
def memories(tenant):
    put(tenant, "u1", "trip", {"note": "flight to Lisbon in May"})
    put(tenant, "u1", "food", {"likes": "Lisbon tarts", "tags": ["pastry"]})
    put(tenant, "u1", "pet", {"kind": "cat"})
    put(tenant, "u2", "trip", {"note": "Lisbon"})


def test_results_are_the_items_holding_any_word_best_first_with_a_score(api, memories):
    response = api.get(SEARCH, {"q": "lisbon pastry"})
    assert response.status_code == 200
    body = response.json()
    assert body["next"] is None
    assert [(r["namespace"], r["key"]) for r in body["results"]] == [
        (["users", "u1", "facts"], "food"),
        (["users", "u1", "facts"], "trip"),
    ]
    assert body["results"][0]["value"] == {"likes": "Lisbon tarts", "tags": ["pastry"]}
    assert body["results"][0]["score"] > body["results"][1]["score"] >= 1


def test_the_cursor_pages_through_every_result_once(api, tenant):
    for i in range(5):
        put(tenant, "u1", f"k{i}", {"t": "kiwi"})
    seen, url = [], SEARCH + "?q=kiwi&limit=2"
    while url:
        body = api.get(url).json()
        seen += [r["key"] for r in body["results"]]
        url = body["next"]
    assert seen == ["k4", "k3", "k2", "k1", "k0"]  # equal scores: the newest first


def test_another_tenant_finds_nothing_of_this_one(other_api, memories):
    response = other_api.get(SEARCH, {"q": "lisbon"})
    assert response.status_code == 200 and response.json()["results"] == []


@pytest.mark.parametrize(
    "params, field",
    [
        ({}, "q"),
        ({"q": " "}, "q"),
        ({"q": "!!!"}, "q"),
        ({"q": "a\x00b"}, "q"),
        ({"q": "x" * 10_001}, "q"),
        ({"q": "lisbon", "limit": 0}, "limit"),
        ({"q": "lisbon", "limit": 101}, "limit"),
        ({"q": "lisbon", "cursor": "!!!"}, "cursor"),
    ],
)
def test_bad_queries_are_400s_naming_the_field(api, memories, params, field):
    assert_error(api.get(SEARCH, params), 400, "invalid", field=field)


def test_a_user_id_the_api_refuses_is_a_400(api):
    assert_error(api.get("/api/v1/users/%00/memories/search/", {"q": "lisbon"}), 400, "invalid", field="user_id")


def test_the_search_is_in_the_openapi_schema():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/users/{user_id}/memories/search/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"q", "limit", "cursor"}


@pytest.mark.django_db(transaction=True)  # a replica sees only committed rows
def test_a_search_reads_the_primary_even_with_a_healthy_replica(api, memories, replica):
    """Memories are user data, which no replica serves (DATABASE_PRIMARY_ONLY_APPS): right after an
    erasure, a lagging replica would still find the erased words."""
    with (
        CaptureQueriesContext(connections["default"]) as on_primary,
        CaptureQueriesContext(connections[replica]) as on_replica,
    ):
        response = api.get(SEARCH, {"q": "lisbon"})
    assert response.status_code == 200 and len(response.json()["results"]) == 2
    assert any("userdata_app_memoryitem" in q["sql"] for q in on_primary.captured_queries)
    assert not any("userdata_app_memoryitem" in q["sql"] for q in on_replica.captured_queries)
