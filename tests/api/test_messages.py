"""Message history over HTTP: append (list or one, retried appends), read pages, after_seq, role, recent."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app import services
from sessions_app.models import Message
from tests.api.assertions import assert_error

pytestmark = pytest.mark.django_db
M = "/api/v1/users/u1/sessions/s1/messages/"


@pytest.fixture
def session(tenant):
    return services.session_create(tenant=tenant, user_id="u1", session_id="s1")


def test_append_a_list_returns_stored_messages_with_seqs(api, session):
    response = api.post(
        M,
        {
            "messages": [
                {"client_id": "m1", "role": "user", "content": "hi", "metadata": {"a": 1}},
                {
                    "client_id": "m2",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "hello"}],
                    "usage": {"tokens": 3},
                },
            ]
        },
        format="json",
    )
    assert response.status_code == 201
    stored = response.json()["messages"]
    assert [m["seq"] for m in stored] == [1, 2]
    assert stored[1]["content"] == [{"type": "text", "text": "hello"}] and stored[1]["usage"] == {"tokens": 3}
    assert set(stored[0]) == {
        "seq",
        "client_id",
        "role",
        "type",
        "status",
        "name",
        "content",
        "metadata",
        "usage",
        "created_at",
    }


def test_append_one_message_as_the_whole_body(api, session):
    response = api.post(M, {"role": "user", "content": "one"}, format="json")
    assert response.status_code == 201 and response.json()["messages"][0]["seq"] == 1


def test_retried_append_is_200_with_the_same_seqs_and_stores_nothing_twice(api, session):
    body = {"messages": [{"client_id": "m1", "content": "a"}, {"client_id": "m2", "content": "b"}]}
    first = api.post(M, body, format="json")
    again = api.post(M, body, format="json")
    assert first.status_code == 201 and again.status_code == 200
    assert [m["seq"] for m in again.json()["messages"]] == [1, 2]
    assert Message.objects.count() == 2


@pytest.mark.parametrize(
    "body, field",
    [
        ({"messages": []}, "messages"),
        ({"messages": "x"}, "messages"),
        ({"messages": [{"content": 5}]}, "messages[0].content"),
        ({"messages": [{"role": "r" * 40}]}, "messages[0].role"),
        ({"messages": [{"content": "ok"}, {"bogus": 1}]}, "messages[1]"),
        ({"messages": [{"content": "nul \x00"}]}, "messages[0].content"),
        ({"messages": [{"metadata": []}]}, "messages[0].metadata"),
        ({"messages": [{"client_id": "a"}, {"client_id": "a"}]}, "messages"),
        ({"messages": [], "extra": 1}, "extra"),
        ([{"content": "a list body"}], "messages"),
    ],
)
def test_append_validation_names_the_field_and_stores_nothing(api, session, body, field):
    assert_error(api.post(M, body, format="json"), 400, "invalid", field=field)
    assert not Message.objects.exists()


def test_append_to_missing_session_is_404(api):
    assert_error(api.post(M, {"content": "x"}, format="json"), 404, "not_found")


@pytest.fixture
def history(session):
    services.message_append(
        session=session,
        messages=[{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(7)],
    )
    return session


def _seqs(response):
    assert response.status_code == 200, response.content
    return [m["seq"] for m in response.json()["results"]]


def test_read_pages_in_seq_order(api, history):
    page = api.get(M, {"page_size": 3}).json()
    seqs = [m["seq"] for m in page["results"]]
    while page["next"]:
        page = api.get(page["next"]).json()
        seqs += [m["seq"] for m in page["results"]]
    assert seqs == [1, 2, 3, 4, 5, 6, 7]


def test_after_seq_role_and_recent(api, history):
    assert _seqs(api.get(M, {"after_seq": 5})) == [6, 7]
    assert _seqs(api.get(M, {"role": "assistant"})) == [2, 4, 6]
    recent = api.get(M, {"recent": 3})
    assert _seqs(recent) == [5, 6, 7] and recent.json()["next"] is None
    assert _seqs(api.get(M, {"recent": 2, "role": "user"})) == [5, 7]


def test_first_page_of_an_empty_history_and_of_no_session(api, session):
    """The first page finds its session in its own statement (PostgreSQL): an empty history is an
    empty page with its generation, a session that does not exist a 404."""
    empty = api.get(M, {"after_seq": 0})
    assert empty.json() == {"next": None, "previous": None, "results": []}
    assert empty["X-History-Generation"] == "0"
    assert_error(api.get(M.replace("/s1/", "/nope/")), 404, "not_found")


def test_a_first_page_over_its_budget_goes_on_from_the_rows_it_read(api, session, settings, postgres_only):
    """A row over its share of the budget: the page's own statement, then the rows' lengths and
    the rows that fit (json_rows.bounded_fetch), not the page's first query again."""
    texts = ["small", "x" * 900, "after it"]
    services.message_append(session=session, messages=[{"role": "user", "content": t} for t in texts])
    settings.PAGE_MAX_BYTES = 1_000
    api.get(M, {"recent": 1})  # the API key is cached after a first request
    with CaptureQueriesContext(connection) as queries:
        page = api.get(M, {"page_size": 3}).json()
    assert [m["content"] for m in page["results"]] == texts[:2] and page["next"]
    assert len(queries) == 3, [q["sql"][:80] for q in queries]


@pytest.mark.parametrize(
    "query, field",
    [
        ({"after_seq": "x"}, "after_seq"),
        ({"after_seq": "-1"}, "after_seq"),
        ({"after_seq": "9" * 40}, "after_seq"),
        ({"recent": "0"}, "recent"),
        ({"recent": "501"}, "recent"),
        ({"recent": "2", "after_seq": "1"}, "recent"),
        ({"role": "a\x00b"}, "role"),
        ({"cursor": "cD05OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5"}, "cursor"),  # "p=" + an int beyond 64 bits
        ({"cursor": "cD1hYmM="}, "cursor"),  # "p=abc"
    ],
)
def test_read_validation(api, history, query, field):
    assert_error(api.get(M, query), 400, "invalid", field=field)
