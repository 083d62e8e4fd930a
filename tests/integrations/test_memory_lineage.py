"""Memory lineage through the frameworks' own services against a live server: ADK's memory made
from a session's events records the session and each event, and deleting the session (ADK's
delete_session) deletes those memories; a LangGraph node's put inside a run records its thread,
and the saver's delete_thread takes the items made only from it."""

from __future__ import annotations

import asyncio

import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from agentstate.integrations.adk import AgentStateSessionService
from agentstate.integrations.adk_memory import AgentStateMemoryService
from agentstate.integrations.langgraph import AgentStateSaver
from agentstate.integrations.langgraph_store import AgentStateStore, user_namespace
from tests.client.keys import api_key_new
from userdata_app.memory.models import MemoryItem
from userdata_app.memory.selectors import items_sources

APP = "notes_app"


@pytest.fixture
def key(transactional_db, tenant) -> str:
    return api_key_new(tenant)


def said(author: str, text: str) -> Event:
    role = "user" if author == "user" else "model"
    return Event(author=author, content=types.Content(role=role, parts=[types.Part(text=text)]))


def sources_by_text() -> dict[str, list[dict[str, str]]]:
    items = list(MemoryItem.objects.all())
    sources = items_sources(item.pk for item in items)
    return {item.value.get("text", item.key): sources.get(item.pk, []) for item in items}


def test_adk_memories_record_their_session_and_events_and_go_with_the_session(live_server, key):
    sessions = AgentStateSessionService(live_server.url, key)
    memory = AgentStateMemoryService(live_server.url, key)

    async def remember() -> list[str]:
        tea = await sessions.create_session(app_name=APP, user_id="ada", session_id="tea")
        await sessions.append_event(tea, said("user", "I like tea"))
        city = await sessions.create_session(app_name=APP, user_id="ada", session_id="city")
        await sessions.append_event(city, said("user", "I live in Lyon"))
        await memory.add_session_to_memory(tea)
        await sessions.append_event(tea, said("agent", "Noted, tea"))
        await memory.add_session_to_memory(tea)  # ADK adds a session again as it grows
        await memory.add_session_to_memory(city)
        note = types.Content(role="user", parts=[types.Part(text="born in May")])
        await memory.add_memory(app_name=APP, user_id="ada", memories=[MemoryEntry(id="may", content=note)])
        await memory.add_events_to_memory(app_name=APP, user_id="ada", events=[said("user", "no session here")])
        return [event.id for event in tea.events]

    async def forget() -> list[str]:
        await sessions.delete_session(app_name=APP, user_id="ada", session_id="tea")
        left = await memory.search_memory(app_name=APP, user_id="ada", query="tea Lyon May session")
        await memory.close()
        return sorted(entry.content.parts[0].text for entry in left.memories)

    event_ids = asyncio.run(remember())
    found = sources_by_text()
    assert found["I like tea"] == [{"session_id": "tea", "app_name": APP, "ref": event_ids[0]}]
    assert found["Noted, tea"] == [{"session_id": "tea", "app_name": APP, "ref": event_ids[1]}]
    assert found["born in May"] == found["no session here"] == []  # no source, and it says so
    left = asyncio.run(forget())
    assert set(sources_by_text()) == {"I live in Lyon", "born in May", "no session here"}
    assert left == ["I live in Lyon", "born in May", "no session here"]


class Chat(TypedDict):
    user_id: str
    text: str


def remember(state: Chat, runtime: Runtime) -> dict:
    runtime.store.put(user_namespace(state["user_id"], "facts"), state["text"], {"text": state["text"]})
    return {}


def test_a_langgraph_item_put_in_a_run_records_its_thread_and_goes_with_it(live_server, key):
    builder = StateGraph(Chat)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    with (
        AgentStateSaver(live_server.url, key, default_user_id="ada") as saver,
        AgentStateStore(live_server.url, key, record_thread=True) as store,
    ):
        graph = builder.compile(checkpointer=saver, store=store)
        for thread, text in [("t1", "likes tea"), ("t2", "lives in Lyon"), ("t1", "lives in Lyon")]:
            # durability="sync": the run's checkpoint is stored before the node's put is sent. On
            # SQLite the test's live server answers every request on the test's one in-memory
            # connection, which two requests at once would share (a deployment gives each its own).
            config = {"configurable": {"thread_id": thread, "user_id": "ada"}}
            graph.invoke({"user_id": "ada", "text": text}, config, durability="sync")
        store.put(user_namespace("ada", "facts"), "outside", {"text": "outside a run"})

        assert sources_by_text() == {
            "likes tea": [{"thread_id": "t1"}],
            "lives in Lyon": [{"thread_id": "t2"}, {"thread_id": "t1"}],
            "outside a run": [],
        }
        saver.delete_thread("t1")
        assert sources_by_text() == {"lives in Lyon": [{"thread_id": "t2"}], "outside a run": []}
        assert store.get(user_namespace("ada", "facts"), "lives in Lyon").value == {"text": "lives in Lyon"}


def test_a_store_finds_the_owner_where_its_rule_says_and_older_clients_keep_the_users_rule(live_server, key):
    from agentstate.client import ValidationError
    from agentstate.subject_data import subject_counts
    from agentstate.subjects import USER_DATA
    from agentstate.tenancy.models import Tenant

    with (
        AgentStateStore(live_server.url, key, owner=1) as by_position,
        AgentStateStore(live_server.url, key, owner=lambda ns: ns[-1] if ns[0] == "prefs" else None) as by_rule,
        AgentStateStore(live_server.url, key) as older,
    ):
        by_position.put(("memories", "ada"), "tea", {"likes": "tea"})
        by_rule.put(("prefs", "dark", "ada"), "theme", {"dark": True})
        older.put(user_namespace("ada", "facts"), "city", {"lives": "Lyon"})
        with pytest.raises(ValidationError):
            older.put(("memories", "ada"), "k", {})  # no rule: the server refuses, as before
        with pytest.raises(ValidationError):
            by_position.put(("memories",), "k", {})  # no label at the position
        with pytest.raises(ValueError, match="no person"):
            by_rule.put(("other", "ada"), "k", {})
        assert by_position.get(("memories", "ada"), "tea").value == {"likes": "tea"}
    tenant = Tenant.objects.get(slug="acme")
    assert subject_counts(tenant=tenant, user_id="ada", kinds=[USER_DATA])["memories"] == 3
