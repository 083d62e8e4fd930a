"""History edits over HTTP: pop, rewind, clear, fork; their 409 / 412 / 400 answers change nothing."""

import pytest

from sessions_app import services
from sessions_app.models import Message, Session
from tests.api.assertions import assert_error

pytestmark = pytest.mark.django_db
S = "/api/v1/users/u1/sessions/s1/"


@pytest.fixture
def session(tenant):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.message_append(session=session, messages=[{"role": "user", "content": c} for c in "abc"])
    return session


def _contents(session_pk) -> list[str]:
    return list(Message.objects.filter(session_id=session_pk).order_by("seq").values_list("content", flat=True))


def test_pop_answers_the_message_then_null_and_a_retry_pops_nothing(api, session):
    listed = api.get(S + "messages/").json()["results"]
    first = api.post(S + "messages/pop/", {"idempotency_key": "k1"}, format="json")
    assert first.status_code == 200 and first.json()["message"]["seq"] == 3
    assert set(first.json()["message"]) == {
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
    assert first.json()["message"] == listed[-1]  # as the history showed it, times written alike
    again = api.post(S + "messages/pop/", {"idempotency_key": "k1"}, format="json")
    assert again.json() == first.json() and _contents(session.pk) == ["a", "b"]
    assert api.post(S + "messages/pop/").json()["message"]["content"] == "b"  # no body: a pop without a key
    api.post(S + "messages/pop/")
    assert api.post(S + "messages/pop/").json() == {"message": None}
    body = api.get(S).json()
    assert (body["message_count"], body["last_seq"], body["history_generation"]) == (0, 3, 3)


def test_rewind_and_clear_answer_what_they_removed_and_the_session(api, session):
    services.round_save(tenant=session.tenant, user_id="u1", session_id="s1", state={"r": 1})
    services.round_save(tenant=session.tenant, user_id="u1", session_id="s1", state={"r": 2})
    rewound = api.post(
        S + "messages/rewind/", {"after_seq": 1, "after_round": 1, "expected_last_seq": 3}, format="json"
    )
    assert rewound.status_code == 200
    body = rewound.json()
    assert (body["removed_messages"], body["removed_rounds"]) == (2, 1)
    assert (body["session"]["message_count"], body["session"]["history_generation"]) == (1, 1)
    cleared = api.post(S + "messages/clear/", {"expected_last_seq": 1}, format="json")
    assert cleared.json()["removed_messages"] == 1 and _contents(session.pk) == []
    assert api.post(S + "messages/", {"content": "d"}, format="json").json()["messages"][0]["seq"] == 4


def test_an_old_expected_last_seq_is_412_naming_the_newest_and_changes_nothing(api, session):
    for path, body in [
        ("messages/pop/", {"expected_last_seq": 2}),
        ("messages/rewind/", {"after_seq": 0, "expected_last_seq": 2}),
        ("messages/clear/", {"expected_last_seq": 2}),
        ("fork/", {"new_session_id": "f", "expected_last_seq": 2}),
    ]:
        response = api.post(S + path, body, format="json")
        assert_error(response, 412, "precondition_failed")
        assert response.json()["error"]["fields"] == {"expected_last_seq": ["The newest message is seq 3."]}
    assert _contents(session.pk) == ["a", "b", "c"] and Session.objects.count() == 1


def test_an_ended_session_refuses_edits_with_409_but_can_be_forked(api, session):
    api.post(S + "end/")
    for path, body in [("messages/pop/", {}), ("messages/rewind/", {"after_seq": 0}), ("messages/clear/", {})]:
        assert_error(api.post(S + path, body, format="json"), 409, "session_ended")
    assert _contents(session.pk) == ["a", "b", "c"]
    assert api.post(S + "fork/", {"new_session_id": "after-end"}, format="json").status_code == 201


def test_fork_creates_the_session_with_its_origin_and_an_etag(api, session):
    response = api.post(S + "fork/", {"new_session_id": " branch ", "up_to_seq": 2}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert (body["session_id"], body["user_id"], body["message_count"]) == ("branch", "u1", 2)
    assert body["forked_from"] == {"session_id": "s1", "seq": 2, "round": 0}
    assert response["ETag"] == '"1"'
    listed = api.get("/api/v1/users/u1/sessions/branch/messages/").json()["results"]
    assert [m["content"] for m in listed] == ["a", "b"]
    assert_error(api.post(S + "fork/", {"new_session_id": "branch"}, format="json"), 409, "session_exists")
    assert api.get(S).json()["forked_from"] is None
    own = api.post(S + "fork/", {"new_session_id": "labelled", "metadata": {"branch": "b1"}}, format="json")
    assert own.json()["metadata"] == {"branch": "b1"}


@pytest.mark.parametrize(
    "path, body, field",
    [
        ("messages/pop/", {"idempotency_key": "a/b"}, "idempotency_key"),
        ("messages/pop/", {"idempotency_key": 5}, "idempotency_key"),
        ("messages/pop/", {"expected_last_seq": -1}, "expected_last_seq"),
        ("messages/pop/", {"key": "x"}, "key"),
        ("messages/rewind/", {}, "after_seq"),
        ("messages/rewind/", {"after_seq": "x"}, "after_seq"),
        ("messages/rewind/", {"after_seq": 1.5}, "after_seq"),
        ("messages/rewind/", {"after_seq": 2**63}, "after_seq"),
        ("messages/rewind/", {"after_seq": 0, "after_round": 2**31}, "after_round"),
        ("messages/clear/", {"expected_last_seq": "three"}, "expected_last_seq"),
        ("fork/", {"new_session_id": "a/b"}, "new_session_id"),
        ("fork/", {"up_to_seq": -1}, "up_to_seq"),
        ("fork/", {"up_to_round": -1}, "up_to_round"),
        ("fork/", {"metadata": ["not", "an", "object"]}, "metadata"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(api, session, path, body, field):
    response = api.post(S + path, body, format="json")
    assert_error(response, 400, "invalid")
    assert field in response.json()["error"]["fields"]
    assert _contents(session.pk) == ["a", "b", "c"] and Session.objects.count() == 1


def test_edits_of_a_missing_session_are_404(api, tenant):
    for path in ("messages/pop/", "messages/clear/", "fork/"):
        assert_error(api.post("/api/v1/users/u1/sessions/missing/" + path), 404, "not_found")


def test_history_pages_carry_the_generation_so_a_reader_sees_an_edit(api, session):
    first = api.get(S + "messages/?page_size=2")
    assert first["X-History-Generation"] == "0"
    api.post(S + "messages/pop/")
    following = api.get(first.json()["next"])
    assert following["X-History-Generation"] == "1" and following.json()["results"] == []
    assert api.get(S + "messages/?recent=5")["X-History-Generation"] == "1"


@pytest.mark.parametrize("rewind_to, then", [(10, 15), (40, 5), (0, 30)])
def test_the_recent_messages_after_an_edit_left_a_gap_in_the_seqs(api, session, rewind_to, then):
    """A recent read looks at the newest seqs first; an edit's gap can leave fewer there than asked,
    and the answer is still the newest messages of the history."""
    api.post(S + "messages/", {"messages": [{"content": f"m{n}"} for n in range(4, 51)]}, format="json")
    api.post(S + "messages/rewind/", {"after_seq": rewind_to}, format="json")
    api.post(S + "messages/", {"messages": [{"content": f"n{n}"} for n in range(then)]}, format="json")
    expected = _contents(session.pk)[-20:]
    assert [m["content"] for m in api.get(S + "messages/?recent=20").json()["results"]] == expected
    assert len(expected) == min(20, rewind_to + then)
