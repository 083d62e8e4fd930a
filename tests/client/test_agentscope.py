"""The AgentScope adapters against a live server, run through the seeds' documented flows.

Each scenario is what an agent written for AgentScope's in-memory services does; the expected
values are what the seed's in-memory service returns for the same calls, except where
docs/CLIENT.md documents a difference (tested separately below).
"""

import logging
import uuid

import pytest
from pydantic import BaseModel
import pytest_asyncio

from agentstate.client import AgentStateClient, Conflict, RemoteSessionHistoryService, RemoteStateService
from agentstate.client.agentscope import Message, Session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest_asyncio.fixture
async def history(live_server, agent_key):
    service = RemoteSessionHistoryService(live_server.url, agent_key)
    yield service
    await service.stop()


@pytest_asyncio.fixture
async def states(live_server, agent_key):
    service = RemoteStateService(live_server.url, agent_key)
    yield service
    await service.stop()


async def test_state_service_seed_flow(states):
    with pytest.raises(RuntimeError, match="Service not started"):
        await states.save_state("u1", {"a": 1})
    assert await states.health() is False
    await states.start()
    assert await states.health() is True

    assert await states.save_state("u1", {"a": 1}) == 1
    assert await states.save_state("u1", {"a": 2}) == 2
    assert await states.save_state("u1", {"a": 5}, round_id=5) == 5
    assert await states.save_state("u1", {"a": 3}, round_id=3) == 3  # sparse ids
    assert await states.save_state("u1", {"b": 1}) == 6  # max + 1
    assert await states.export_state("u1") == {"b": 1}  # latest is the largest id, not the last written
    assert await states.save_state("u1", {"a": "again"}, round_id=1) == 1  # overwrite
    assert await states.export_state("u1", round_id=1) == {"a": "again"}
    assert await states.export_state("u1") == {"b": 1}
    assert await states.export_state("u1", round_id=4) is None
    assert await states.export_state("u1", session_id="other") is None
    assert await states.export_state("nobody") is None

    assert await states.save_state("u1", {"d": 1}, session_id="") == 7  # "" means "default"
    assert await states.export_state("u1", session_id="default") == {"d": 1}
    assert await states.save_state("u1", {"s": 1}, session_id="s2") == 1
    assert await states.export_state("u2") is None

    state = {"memory": [1]}
    await states.save_state("u1", state, session_id="s3")
    state["memory"].append(2)  # the caller's later changes do not reach the saved state
    assert await states.export_state("u1", session_id="s3") == {"memory": [1]}

    await states.stop()
    assert await states.health() is False
    with pytest.raises(RuntimeError, match="Service not started"):
        await states.export_state("u1")


async def test_state_service_stop_keeps_the_data(states):
    await states.start()
    await states.save_state("u1", {"kept": True})
    await states.stop()
    await states.start()
    assert await states.export_state("u1") == {"kept": True}


async def test_session_history_seed_flow(history):
    assert await history.health() is True  # works without start(), as the seed

    generated = await history.create_session("u1")
    assert isinstance(generated, Session) and generated.user_id == "u1" and generated.messages == []
    uuid.UUID(generated.id)
    chat = await history.create_session("u1", "  chat  ")
    assert (chat.id, chat.messages) == ("chat", [])

    session = await history.get_session("u1", "chat")
    assert (session.id, session.user_id, session.messages) == ("chat", "u1", [])
    await history.append_message(session, {"role": "user", "content": [{"type": "text", "text": "hi"}]})
    assert len(session.messages) == 1 and isinstance(session.messages[0], Message)
    assert session.messages[0].id.startswith("msg_") and session.messages[0].object == "message"
    reply = Message(
        role="assistant",
        status="completed",
        content=[{"type": "text", "text": "hello"}],
        usage={"input_tokens": 3, "output_tokens": 1},
    )
    await history.append_message(session, [{"role": "user", "content": "plain text", "metadata": {"k": "v"}}, reply])
    assert session.messages[2] is reply

    stored = await history.get_session("u1", "chat")
    assert [m.model_dump() for m in stored.messages] == [m.model_dump() for m in session.messages]

    created_by_get = await history.get_session("u1", "new")  # a missing session is created, empty
    assert (created_by_get.id, created_by_get.messages) == ("new", [])
    listed = await history.list_sessions("u1")
    assert [(s.id, s.user_id, s.messages) for s in listed] == [
        (generated.id, "u1", []),
        ("chat", "u1", []),
        ("new", "u1", []),
    ]
    assert await history.list_sessions("u2") == []

    await history.delete_session("u1", "chat")
    await history.delete_session("u1", "never-existed")  # nothing happens
    assert [s.id for s in await history.list_sessions("u1")] == [generated.id, "new"]
    assert (await history.get_session("u1", "chat")).messages == []  # deleted means gone


class AgentScopeStyleMessage(BaseModel):
    """Shaped like AgentScope's own Message (a pydantic model the adapter does not know), with fields
    the server does not keep."""

    id: str = "msg_agentscope"
    object: str = "message"
    type: str = "function_call"
    status: str = "completed"
    role: str = "assistant"
    content: list[dict] = [{"type": "data", "data": {"name": "search", "arguments": "{}"}, "index": None}]
    code: str | None = None
    sequence_number: int | None = 4


async def test_append_accepts_agentscopes_message_objects_and_empty_lists(history):
    session = await history.create_session("u1", "chat")
    original = AgentScopeStyleMessage()
    await history.append_message(session, original)
    await history.append_message(session, [])
    assert session.messages == [original]
    (stored,) = (await history.get_session("u1", "chat")).messages
    assert (stored.id, stored.type, stored.status) == ("msg_agentscope", "function_call", "completed")
    assert stored.role == "assistant"
    assert stored.content == original.content


async def test_create_session_of_an_existing_id_returns_it_untouched(history):
    session = await history.create_session("u1", "chat")
    await history.append_message(session, {"role": "user", "content": "keep me"})
    again = await history.create_session("u1", "chat")
    assert [m.content for m in again.messages] == ["keep me"]


async def test_a_repeated_append_of_the_same_message_is_stored_once(history):
    session = await history.create_session("u1", "chat")
    message = Message(id="msg_fixed", role="user", content="once")
    await history.append_message(session, message)
    await history.append_message(session, message)
    assert [m.id for m in (await history.get_session("u1", "chat")).messages] == ["msg_fixed"]


async def test_append_to_a_session_missing_on_the_server_warns_and_stores_nothing(history, caplog):
    ghost = Session(id="ghost", user_id="u1")
    with caplog.at_level(logging.WARNING, logger="agentstate.client"):
        await history.append_message(ghost, {"role": "user", "content": "lost"})
    assert len(ghost.messages) == 1 and "ghost" in caplog.text
    assert [s.id for s in await history.list_sessions("u1")] == []


async def test_append_to_an_ended_session_raises_and_leaves_the_callers_list(history, live_server, agent_key):
    session = await history.create_session("u1", "chat")
    with AgentStateClient(live_server.url, agent_key) as client:
        client.session_end("u1", "chat")
    with pytest.raises(Conflict):
        await history.append_message(session, {"role": "user", "content": "late"})
    assert session.messages == []


async def test_state_and_history_share_the_servers_sessions(states, history):
    await states.start()
    await states.save_state("u1", {"a": 1})
    assert [s.id for s in await history.list_sessions("u1")] == ["default"]
