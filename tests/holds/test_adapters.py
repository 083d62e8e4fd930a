"""Each framework adapter's destructive call on held data raises ``Held``, which is also the
``ValueError`` the framework's own stores raise when they refuse an operation; nothing is deleted,
and writes go on. Against a live server, as the frameworks drive them."""

from __future__ import annotations

import asyncio

import pytest
from google.adk.events import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session as AdkSession
from google.genai import types

from agentstate.client import Held
from agentstate.holds import services as holds
from agentstate.integrations.adk import AgentStateSessionService
from agentstate.integrations.adk_memory import AgentStateMemoryService
from agentstate.integrations.langgraph import AgentStateSaver
from agentstate.integrations.langgraph_store import AgentStateStore
from agentstate.integrations.openai_agents import AgentStateSession
from sessions_app.models import Message, Session
from userdata_app.memory.models import MemoryItem

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="adapters", tenant=tenant)[1]


@pytest.fixture
def hold(tenant):
    return lambda: holds.legal_hold_place(tenant=tenant, user_id="u1", reference="CASE-5", reason="r")


def _refused(call) -> Held:
    with pytest.raises(
        ValueError, match="legal hold"
    ) as raised:  # what code written for the framework's own stores catches
        call()
    assert isinstance(raised.value, Held) and raised.value.holds == ["CASE-5"]
    return raised.value


def test_adk_delete_session(live_server, key, hold):
    async def with_service(act):
        service = AgentStateSessionService(live_server.url, key)
        try:
            await act(service)
        finally:
            await service.close()

    async def create(service):
        await service.create_session(app_name="app", user_id="u1", session_id="a1")

    async def delete_then_write(service):
        with pytest.raises(ValueError, match="legal hold") as raised:
            await service.delete_session(app_name="app", user_id="u1", session_id="a1")
        assert isinstance(raised.value, Held) and raised.value.holds == ["CASE-5"]
        session = await service.get_session(app_name="app", user_id="u1", session_id="a1")
        content = types.Content(role="user", parts=[types.Part(text="still here")])
        await service.append_event(session, Event(author="user", content=content))  # writes go on

    asyncio.run(with_service(create))
    hold()
    asyncio.run(with_service(delete_then_write))
    assert Session.objects.filter(session_id="a1").exists()


def test_openai_agents_pop_item_and_clear_session(live_server, key, hold):
    session = AgentStateSession("chat-1", base_url=live_server.url, api_key=key, user_id="u1")

    async def closing(act):
        try:
            await act()
        finally:
            await session.aclose()

    async def refused_then_write():
        for destroy in (session.pop_item, session.clear_session):
            with pytest.raises(ValueError, match="legal hold") as raised:
                await destroy()
            assert isinstance(raised.value, Held) and raised.value.holds == ["CASE-5"]
        await session.add_items([{"role": "user", "content": "still here"}])

    asyncio.run(closing(lambda: session.add_items([{"role": "user", "content": "hi"}])))
    hold()
    asyncio.run(closing(refused_then_write))
    assert Message.objects.count() == 2


def test_langgraph_delete_thread_and_the_stores_delete(live_server, key, hold):
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    checkpoint = {"v": 1, "id": "c1", "ts": "2026-01-01T00:00:00+00:00", "channel_values": {}, "channel_versions": {}}
    with (
        AgentStateSaver(live_server.url, key, default_user_id="u1") as saver,
        AgentStateStore(live_server.url, key) as store,
    ):
        saver.put(config, {**checkpoint, "versions_seen": {}, "updated_channels": None}, {}, {})
        store.put(("users", "u1", "notes"), "k", {"v": 1})
        hold()
        _refused(lambda: saver.delete_thread("t1"))
        _refused(lambda: store.delete(("users", "u1", "notes"), "k"))
        store.put(("users", "u1", "notes"), "k", {"v": 2})  # writes go on
    assert Session.objects.filter(framework="langgraph").exists()
    assert MemoryItem.objects.get().value == {"v": 2}


def test_adk_delete_memory(live_server, key, hold):
    """ADK's delete_memory forgets by emptying the memory: a deletion a hold refuses, not a write."""
    said = Event(author="user", content=types.Content(role="user", parts=[types.Part(text="my PIN is 1234")]))

    async def with_memory(act):
        memory = AgentStateMemoryService(live_server.url, key)
        try:
            await act(memory)
        finally:
            await memory.close()

    async def remember(memory):
        await memory.add_session_to_memory(AdkSession(id="a1", app_name="app", user_id="u1", events=[said]))

    async def forget_then_write(memory):
        with pytest.raises(ValueError, match="legal hold") as raised:
            await memory.delete_memory(app_name="app", user_id="u1", memory_id=said.id)
        assert isinstance(raised.value, Held) and raised.value.holds == ["CASE-5"]
        found = await memory.search_memory(app_name="app", user_id="u1", query="PIN")
        assert [entry.id for entry in found.memories] == [said.id]  # the memory stays
        content = types.Content(role="user", parts=[types.Part(text="still here")])
        await memory.add_memory(app_name="app", user_id="u1", memories=[MemoryEntry(id="m2", content=content)])

    asyncio.run(with_memory(remember))
    hold()
    asyncio.run(with_memory(forget_then_write))
    assert MemoryItem.objects.get(key=said.id).value["text"] == "my PIN is 1234"
    assert MemoryItem.objects.count() == 2
