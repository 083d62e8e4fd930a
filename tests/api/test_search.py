"""GET /api/v1/users/{user_id}/messages/search/: a user's messages by their words, tenant-scoped
by the API key, paged by cursor; bad queries are 400s naming the field, never a 500."""

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from sessions_app import services
from tests.api.assertions import assert_error

pytestmark = pytest.mark.django_db
SEARCH = "/api/v1/users/u1/messages/search/"


@pytest.fixture
def history(tenant):
    first = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.message_append(
        session=first,
        messages=[{"role": "user", "content": "book a flight to Lisbon"}, {"role": "assistant", "content": "done"}],
    )
    second = services.session_create(tenant=tenant, user_id="u1", session_id="s2")
    services.message_append(
        session=second, messages=[{"role": "assistant", "content": [{"type": "text", "text": "Lisbon is sunny"}]}]
    )
    return first, second


def test_results_name_the_session_and_seq_with_a_snippet_and_a_rank(api, history):
    response = api.get(SEARCH, {"q": "lisbon"})
    assert response.status_code == 200
    body = response.json()
    assert body["next"] is None
    assert sorted((r["session_id"], r["seq"], r["role"]) for r in body["results"]) == [
        ("s1", 1, "user"),
        ("s2", 1, "assistant"),
    ]
    assert all("**Lisbon**" in r["snippet"] and isinstance(r["rank"], float) for r in body["results"])


def test_the_cursor_pages_through_every_result_once(api, tenant):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.message_append(session=session, messages=[{"content": f"kiwi {i}"} for i in range(5)])
    seen, url = [], SEARCH + "?q=kiwi&limit=2"
    while url:
        body = api.get(url).json()
        seen += [r["seq"] for r in body["results"]]
        url = body["next"]
    assert sorted(seen) == [1, 2, 3, 4, 5]


def test_another_tenant_finds_nothing_of_this_one(other_api, history):
    response = other_api.get(SEARCH, {"q": "lisbon"})
    assert response.status_code == 200 and response.json()["results"] == []


@pytest.mark.parametrize(
    "params, field",
    [
        ({}, "q"),
        ({"q": ""}, "q"),
        ({"q": "x" * 257}, "q"),
        ({"q": "-lisbon"}, "q"),
        ({"q": "a\x00b"}, "q"),
        ({"q": "lisbon", "limit": 0}, "limit"),
        ({"q": "lisbon", "limit": 101}, "limit"),
        ({"q": "lisbon", "cursor": "!!!"}, "cursor"),
        ({"q": "lisbon", "cursor": "bzEwMDAwMDA"}, "cursor"),  # an offset past the deepest page
    ],
)
def test_bad_queries_are_400s_naming_the_field(api, history, params, field):
    assert_error(api.get(SEARCH, params), 400, "invalid", field=field)


def test_fts_syntax_is_searched_as_words_not_run(api, history):
    for query in ['lisbon NEAR("a" b)', "lisbon:*", "lisbon AND (", 'lisbon "', "lisbon ^ * - OR"]:
        response = api.get(SEARCH, {"q": query})
        assert response.status_code == 200, (query, response.content)


def test_a_user_id_the_api_refuses_is_a_400(api):
    assert_error(api.get("/api/v1/users/%00/messages/search/", {"q": "lisbon"}), 400, "invalid", field="user_id")


def test_the_search_is_in_the_openapi_schema():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/users/{user_id}/messages/search/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"q", "limit", "cursor"}


@pytest.mark.django_db(transaction=True)  # a replica sees only committed rows
def test_a_search_reads_the_replica_like_the_other_listings(api, history, replica):
    with (
        CaptureQueriesContext(connections["default"]) as on_primary,
        CaptureQueriesContext(connections[replica]) as on_replica,
    ):
        response = api.get(SEARCH, {"q": "lisbon"})
    assert response.status_code == 200 and len(response.json()["results"]) == 2
    assert any("sessions_app_message" in q["sql"] for q in on_replica.captured_queries)
    assert not any("sessions_app_message" in q["sql"] for q in on_primary.captured_queries)
