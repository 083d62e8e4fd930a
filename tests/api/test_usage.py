"""Model usage per turn over HTTP: stored against the history's current turn, replaced per turn,
gone with the turn a history edit removes, in the subject export and erasure."""

import pytest

from agentstate import subject_data
from agentstate.subjects import PROCESS_STATE
from sessions_app import services
from sessions_app.models import RunUsage
from sessions_app.subject_data import subject_sessions_export
from tests.api.assertions import assert_error

pytestmark = pytest.mark.django_db
S = "/api/v1/users/u1/sessions/s1/"


@pytest.fixture
def session(tenant):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.message_append(
        session=session,
        messages=[
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "1"},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "2"},
        ],
    )
    return session


def _turns(api) -> list[tuple[int, int]]:
    response = api.get(S + "usage/")
    assert response.status_code == 200
    return [(row["turn"], row["total_tokens"]) for row in response.json()["results"]]


def test_usage_goes_to_the_current_turn_and_a_second_store_replaces_it(api, session):
    details = {"cached_tokens": 3}
    first = api.post(S + "usage/", {"requests": 1, "input_tokens": 5, "total_tokens": 8}, format="json")
    assert first.status_code == 201 and first.json()["turn"] == 2
    again = api.post(S + "usage/", {"requests": 2, "total_tokens": 20, "input_tokens_details": details}, format="json")
    assert again.json()["turn"] == 2 and again.json()["input_tokens_details"] == details
    api.post(S + "usage/", {"turn": 1, "total_tokens": 4}, format="json")
    assert _turns(api) == [(1, 4), (2, 20)]


def test_an_empty_history_has_no_turn_to_attribute_usage_to(api, tenant):
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    assert_error(api.post(S + "usage/", {"total_tokens": 1}, format="json"), 400, "invalid", "turn")
    assert not RunUsage.objects.exists()


@pytest.mark.parametrize(
    "body",
    [{"total_tokens": -1}, {"input_tokens_details": {"k": "x" * 5000}}, {"input_tokens_details": [1]}, {"tokens": 1}],
)
def test_bad_usage_is_a_400_naming_the_field(api, session, body):
    assert_error(api.post(S + "usage/", body, format="json"), 400, "invalid", next(iter(body)))


def test_a_pop_of_a_turns_user_message_drops_that_turns_usage_and_clear_drops_all(api, session):
    for turn in (0, 1, 2):
        api.post(S + "usage/", {"turn": turn, "total_tokens": 10 + turn}, format="json")
    api.post(S + "messages/pop/", {}, format="json")  # the answer of turn 2: the turn stays
    assert _turns(api) == [(0, 10), (1, 11), (2, 12)]
    api.post(S + "messages/pop/", {}, format="json")  # turn 2's user message
    assert _turns(api) == [(0, 10), (1, 11)]
    api.post(S + "messages/clear/", {}, format="json")
    assert _turns(api) == []


def test_pops_down_to_an_empty_history_drop_every_turns_usage_and_keep_the_answers(api, session):
    for turn in (0, 1, 2, 5):  # turn 5 was stored by number, past the history's turns
        api.post(S + "usage/", {"turn": turn, "total_tokens": 10 + turn}, format="json")
    answers = [api.post(S + "messages/pop/", {"idempotency_key": f"k{n}"}, format="json").json() for n in range(4)]
    assert [a["message"]["content"] for a in answers] == ["2", "two", "1", "one"]
    assert _turns(api) == []
    retried = api.post(S + "messages/pop/", {"idempotency_key": "k1"}, format="json").json()
    assert retried == answers[1]
    assert api.get(S).json()["message_count"] == 0


def test_a_fork_copies_the_history_not_the_usage(api, session):
    api.post(S + "usage/", {"total_tokens": 9}, format="json")
    assert api.post(S + "fork/", {"new_session_id": "f1"}, format="json").status_code == 201
    assert api.get("/api/v1/users/u1/sessions/f1/usage/").json()["results"] == []


def test_usage_is_in_the_subject_export_and_goes_with_the_erasure(api, tenant, session):
    api.post(S + "usage/", {"total_tokens": 9, "output_tokens_details": {"reasoning_tokens": 2}}, format="json")
    [document] = list(subject_sessions_export(tenant=tenant, user_id="u1"))
    [row] = list(document["run_usage"])
    assert (row["turn"], row["total_tokens"], row["output_tokens_details"]) == (2, 9, {"reasoning_tokens": 2})
    counts = subject_data.subject_erase(tenant=tenant, user_id="u1", kinds=[PROCESS_STATE])
    assert counts["run_usage"] == 1 and not RunUsage.objects.exists()
