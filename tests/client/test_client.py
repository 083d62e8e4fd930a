"""AgentStateClient against a live server: every method, every typed error, retries, async."""

import httpx
import pytest

from agentstate.client import (
    AgentStateClient,
    AsyncAgentStateClient,
    AuthenticationError,
    Conflict,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    RateLimited,
    ValidationError,
)

pytestmark = pytest.mark.django_db(transaction=True)

USER = "alice ü"  # a space and a non-ASCII letter travel percent-encoded
SID = "chat 1.0"


def test_session_lifecycle(client):
    created = client.session_create(USER, SID, agent_id="planner", metadata={"topic": "trips"})
    assert (created.user_id, created.session_id, created.agent_id) == (USER, SID, "planner")
    assert created.metadata == {"topic": "trips"}
    got = client.session_get(USER, SID)
    assert got.session_id == SID and got.ended_at is None and got.version is not None

    updated = client.session_update(USER, SID, workspace_id="w1", expected_version=got.version)
    assert updated.workspace_id == "w1" and updated.version != got.version
    with pytest.raises(PreconditionFailed):
        client.session_update(USER, SID, agent_id="other", expected_version=got.version)
    assert client.session_get(USER, SID).agent_id == "planner"

    with pytest.raises(PreconditionFailed):
        client.session_end(USER, SID, expected_version=got.version)
    ended = client.session_end(USER, SID, expected_version=updated.version)
    assert ended.ended_at is not None
    with pytest.raises(Conflict) as caught:
        client.message_append(USER, SID, {"content": "too late"})
    assert caught.value.code == "session_ended"

    with pytest.raises(PreconditionFailed):
        client.session_delete(USER, SID, expected_version=updated.version)
    client.session_delete(USER, SID, expected_version=ended.version)
    with pytest.raises(NotFound):
        client.session_get(USER, SID)


def test_session_create_picks_an_id_and_refuses_an_existing_one(client):
    created = client.session_create(USER)
    assert len(created.session_id) >= 32
    with pytest.raises(Conflict) as caught:
        client.session_create(USER, created.session_id)
    assert caught.value.code == "session_exists"


def test_session_list_and_iteration_follow_next(client):
    ids = [f"s{i}" for i in range(5)]
    for sid in ids:
        client.session_create(USER, sid)
    client.session_create("bob", "b0")
    client.session_end(USER, "s4")

    page = client.session_list(user_id=USER, page_size=2)
    assert [s.session_id for s in page.results] == ids[:2] and page.next_cursor
    second = client.session_list(user_id=USER, page_size=2, cursor=page.next_cursor)
    assert [s.session_id for s in second.results] == ids[2:4]
    assert [s.session_id for s in client.session_iter(user_id=USER, page_size=2)] == ids
    assert [s.session_id for s in client.session_iter(user_id=USER, ended=True)] == ["s4"]
    assert len(list(client.session_iter(page_size=2))) == 6
    with pytest.raises(TypeError):
        client.session_list(usr_id=USER)


def test_messages_append_list_recent_and_idempotent_retry(client):
    client.session_create(USER, SID)
    first = client.message_append(USER, SID, {"client_id": "m1", "role": "user", "content": "hi"})
    assert [(m.seq, m.client_id, m.content) for m in first] == [(1, "m1", "hi")]
    parts = [{"type": "text", "text": "hello"}]
    batch = client.message_append(
        USER,
        SID,
        [
            {"client_id": "m2", "role": "assistant", "content": parts, "usage": {"output_tokens": 3}},
            {"client_id": "m3", "role": "user", "content": "bye", "metadata": {"lang": "en"}},
        ],
    )
    assert [m.seq for m in batch] == [2, 3] and batch[0].content == parts

    again = client.message_append(
        USER,
        SID,
        [
            {"client_id": "m2", "role": "assistant", "content": parts},
            {"client_id": "m3", "role": "user", "content": "bye"},
        ],
    )
    assert [m.seq for m in again] == [2, 3]
    assert client.session_get(USER, SID).message_count == 3

    assert [m.seq for m in client.message_list(USER, SID, after_seq=1).results] == [2, 3]
    assert [m.client_id for m in client.message_list(USER, SID, role="user").results] == ["m1", "m3"]
    assert [m.seq for m in client.message_iter(USER, SID, page_size=1)] == [1, 2, 3]
    assert [m.seq for m in client.message_recent(USER, SID, 2)] == [2, 3]
    assert [m.client_id for m in client.message_recent(USER, SID, 1, role="user")] == ["m3"]


def test_message_search_finds_the_users_messages_across_sessions_page_by_page(client):
    client.session_create(USER, "trip")
    client.session_create(USER, "work")
    client.message_append(USER, "trip", [{"content": "book a flight to Lisbon"}, {"content": "hotel"}])
    client.message_append(USER, "work", [{"content": [{"type": "text", "text": "Lisbon office"}]}])
    page = client.message_search(USER, "lisbon", limit=1)
    assert len(page.results) == 1 and page.next_cursor and "**Lisbon**" in page.results[0].snippet
    hits = list(client.message_search_iter(USER, "lisbon", limit=1))
    assert sorted((h.session_id, h.seq) for h in hits) == [("trip", 1), ("work", 1)]
    with pytest.raises(ValidationError) as refused:
        client.message_search(USER, "")
    assert "q" in refused.value.fields


def test_memory_search_finds_the_users_items_holding_any_word_page_by_page(client, tenant):
    from userdata_app.memory.services import memory_batch

    for key, text in [("trip", "flight to Lisbon"), ("food", "Lisbon tarts and pastry"), ("pet", "a cat")]:
        memory_batch(tenant=tenant, ops=[{"op": "put", "namespace": ["users", USER], "key": key, "value": {"t": text}}])
    page = client.memory_search(USER, "pastry lisbon", limit=1)
    assert [hit.key for hit in page.results] == ["food"] and page.next_cursor
    hits = list(client.memory_search_iter(USER, "pastry lisbon", limit=1))
    assert [(h.namespace, h.key, h.value["t"]) for h in hits] == [
        (["users", USER], "food", "Lisbon tarts and pastry"),
        (["users", USER], "trip", "flight to Lisbon"),
    ]
    assert hits[0].score > hits[1].score
    with pytest.raises(ValidationError) as refused:
        client.memory_search(USER, "!!")
    assert "q" in refused.value.fields


def test_history_edits_pop_rewind_clear_fork(client):
    client.session_create(USER, SID)
    client.message_append(USER, SID, [{"role": "user", "content": c} for c in "abcd"])
    client.round_save(USER, SID, {"r": 1})
    client.round_save(USER, SID, {"r": 2})
    popped = client.message_pop(USER, SID)
    assert (popped.seq, popped.content) == (4, "d")
    with pytest.raises(PreconditionFailed):
        client.message_rewind(USER, SID, 1, expected_last_seq=4)  # seq 4 is gone: history moved on
    fork = client.session_fork(USER, SID, "branch", up_to_seq=2, up_to_round=1)
    assert fork.forked_from == {"session_id": SID, "seq": 2, "round": 1} and fork.message_count == 2
    edit = client.message_rewind(USER, SID, 1, after_round=1, expected_last_seq=3)
    assert (edit.removed_messages, edit.removed_rounds) == (2, 1)
    assert (edit.session.message_count, edit.session.last_seq, edit.session.history_generation) == (1, 4, 2)
    assert client.message_clear(USER, SID).session.message_count == 0
    assert client.message_pop(USER, SID) is None
    assert [m.content for m in client.message_iter(USER, "branch")] == ["a", "b"]
    client.session_end(USER, SID)
    with pytest.raises(Conflict):
        client.message_clear(USER, SID)


def test_rounds(client):
    assert client.round_save(USER, SID, {"step": 1}).round_id == 1  # creates the session
    assert client.round_save(USER, SID, {"step": 2}).round_id == 2
    assert client.round_save(USER, SID, {"step": 10}, round_id=10).round_id == 10
    assert client.round_latest(USER, SID).state == {"step": 10}
    two = client.round_get(USER, SID, 2)
    assert two.state == {"step": 2} and two.version is not None

    put = client.round_put(USER, SID, 2, {"step": "2b"}, expected_version=two.version)
    assert put.state == {"step": "2b"}
    with pytest.raises(PreconditionFailed):
        client.round_put(USER, SID, 2, {"step": "lost"}, expected_version=two.version)
    assert client.round_get(USER, SID, 2).state == {"step": "2b"}
    with pytest.raises(PreconditionFailed):
        client.round_save(USER, SID, {"step": "lost"}, round_id=2, expected_version=two.version)

    assert [r.round_id for r in client.round_list(USER, SID).results] == [1, 2, 10]
    assert [r.round_id for r in client.round_iter(USER, SID, page_size=2)] == [1, 2, 10]
    client.round_delete(USER, SID, 10)
    with pytest.raises(NotFound):
        client.round_get(USER, SID, 10)
    assert client.round_latest(USER, SID).round_id == 2


def test_working_state_checkpoints_restore_transitions(client):
    client.session_create(USER, SID)
    assert client.working_state_get(USER, SID) == {}
    assert client.working_state_put(USER, SID, {"task": "book", "tool": "search"}) == {"task": "book", "tool": "search"}
    assert client.working_state_patch(USER, SID, {"tool": None, "step": 2}) == {"task": "book", "step": 2}

    cp = client.checkpoint_create(USER, SID, "plan", include_keys=["task", "missing"])
    assert (cp.label, cp.state) == ("plan", {"task": "book"})
    client.checkpoint_create(USER, SID, "plan", state={"task": "fly"})
    assert client.checkpoint_latest(USER, SID, "plan").state == {"task": "fly"}
    assert [c.label for c in client.checkpoint_list(USER, SID).results] == ["plan", "plan"]
    assert len(list(client.checkpoint_iter(USER, SID, page_size=1))) == 2
    with pytest.raises(NotFound):
        client.checkpoint_latest(USER, SID, "nothing")

    moved = client.transition_record(USER, SID, "booker", from_agent="planner", reason="ready")
    assert (moved.from_agent, moved.to_agent, moved.reason) == ("planner", "booker", "ready")
    assert [t.to_agent for t in client.transition_list(USER, SID).results] == ["booker"]
    assert [t.to_agent for t in client.transition_iter(USER, SID)] == ["booker"]

    restore = client.session_restore(USER, SID)
    assert restore.session.session_id == SID and restore.working_state == {"task": "book", "step": 2}
    assert [c.state for c in restore.checkpoints if c.state] and len(restore.checkpoints) == 2
    client.working_state_delete(USER, SID)
    assert client.working_state_get(USER, SID) == {}


def test_user_data(client):
    assert client.user_data_put(USER, "email", "a@example.org").value == "a@example.org"
    client.user_data_put(USER, "prefs", {"seat": "aisle"})
    assert client.user_data_get(USER, "prefs").value == {"seat": "aisle"}
    assert [d.key for d in client.user_data_list(USER).results] == ["email", "prefs"]
    assert [d.key for d in client.user_data_iter(USER, page_size=1)] == ["email", "prefs"]
    client.user_data_delete(USER, "email")
    with pytest.raises(NotFound):
        client.user_data_get(USER, "email")
    client.user_data_put("..", ".", "dots are identifiers too")  # not URL dot-segments
    assert client.user_data_get("..", ".").value == "dots are identifiers too"


def test_subject_export_needs_a_compliance_key_and_returns_everything_of_the_user(live_server, client, compliance_key):
    client.session_create(USER, SID)
    client.message_append(USER, SID, {"role": "user", "content": "Hi"})
    client.user_data_put(USER, "email", "a@example.org")
    with pytest.raises(PermissionDenied):
        client.subject_export(USER)  # an agent key
    with AgentStateClient(live_server.url, compliance_key) as officer:
        (subject,) = officer.subject_export(USER)["subjects"]
        assert subject["user_id"] == USER
        assert [d["value"] for d in subject["user_data"]] == ["a@example.org"]
        (session,) = subject["sessions"]
        assert [m["content"] for m in session["messages"]] == ["Hi"]
        (nobody,) = officer.subject_export("nobody")["subjects"]
        assert nobody["user_data"] == [] and nobody["sessions"] == []


def test_health(client):
    assert client.health()["status"] == "ok"


def test_validation_error_carries_the_servers_message_and_fields(client):
    with pytest.raises(ValidationError) as caught:
        client.session_create("x" * 200, "s")
    assert caught.value.status_code == 400 and "user_id" in caught.value.fields and caught.value.message
    with pytest.raises(ValidationError):
        client.round_save(USER, SID, {"bad": "nul\x00"})


def test_bad_key_and_other_tenants_key(live_server, client, other_key):
    client.session_create(USER, SID)
    with AgentStateClient(live_server.url, "not-a-key") as stranger, pytest.raises(AuthenticationError):
        stranger.session_get(USER, SID)
    with AgentStateClient(live_server.url, other_key) as other:
        with pytest.raises(NotFound):
            other.session_get(USER, SID)
        assert list(other.session_iter(user_id=USER)) == []


def test_rate_limited_carries_retry_after(client, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"api_key": "2/minute"}}
    client.session_create(USER, SID)
    client.session_get(USER, SID)
    with pytest.raises(RateLimited) as caught:
        client.session_get(USER, SID)
    assert caught.value.code == "throttled" and caught.value.retry_after > 0


class _LosesFirstAnswer(httpx.HTTPTransport):
    """Sends the first request for real, then fails as a dropped connection would: the server
    applied it, the client never heard back."""

    def __init__(self):
        super().__init__()
        self.attempts = 0

    def handle_request(self, request):
        self.attempts += 1
        response = super().handle_request(request)
        if self.attempts == 1:
            response.close()
            raise httpx.ReadError("connection dropped", request=request)
        return response


def test_an_append_whose_answer_was_lost_is_retried_and_stored_once(live_server, agent_key, client):
    client.session_create(USER, SID)
    transport = _LosesFirstAnswer()
    with AgentStateClient(live_server.url, agent_key, transport=transport) as flaky:
        stored = flaky.message_append(USER, SID, [{"client_id": "m1", "content": "once"}])
    assert transport.attempts == 2 and [m.seq for m in stored] == [1]
    assert [m.content for m in client.message_iter(USER, SID)] == ["once"]


def test_a_pop_whose_answer_was_lost_is_retried_and_pops_once(live_server, agent_key, client):
    client.session_create(USER, SID)
    client.message_append(USER, SID, [{"content": "keep"}, {"content": "pop me"}])
    transport = _LosesFirstAnswer()
    with AgentStateClient(live_server.url, agent_key, transport=transport) as flaky:
        popped = flaky.message_pop(USER, SID)
    assert transport.attempts == 2 and popped.content == "pop me"
    assert [m.content for m in client.message_iter(USER, SID)] == ["keep"]


@pytest.mark.asyncio
async def test_async_client(live_server, agent_key):
    async with AsyncAgentStateClient(live_server.url, agent_key) as client:
        await client.session_create(USER, SID)
        await client.message_append(USER, SID, [{"client_id": f"m{i}", "content": str(i)} for i in range(3)])
        assert [m.seq async for m in client.message_iter(USER, SID, page_size=2)] == [1, 2, 3]
        assert (await client.message_pop(USER, SID, idempotency_key="k")).seq == 3
        assert (await client.session_fork(USER, SID, "f", up_to_seq=1)).message_count == 1
        assert (await client.message_rewind(USER, SID, 1)).removed_messages == 1
        assert (await client.message_clear(USER, SID)).session.history_generation == 3
        assert (await client.round_save(USER, SID, {"x": 1})).round_id == 1
        assert (await client.round_latest(USER, SID)).state == {"x": 1}
        assert [s.session_id async for s in client.session_iter(user_id=USER)] == [SID, "f"]
        with pytest.raises(NotFound):
            await client.session_get(USER, "missing")
        assert (await client.health())["status"] == "ok"
