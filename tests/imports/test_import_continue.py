"""Threads and sessions imported from the frameworks' own stores go on under the framework through
agentstate's adapters: a LangGraph thread stopped at an interrupt by SqliteSaver or PostgresSaver
is resumed and invoked again through AgentStateSaver; an Agents SDK session from a SQLiteSession
file is appended to through AgentStateSession and read back."""

from __future__ import annotations

import asyncio
import operator
import sqlite3
from typing import Annotated, TypedDict

import pytest
from agents.memory.sqlite_session import SQLiteSession
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from agentstate.integrations.langgraph import AgentStateSaver
from agentstate.integrations.openai_agents import AgentStateSession
from tests.client.keys import api_key_new
from tests.imports.test_import_adk import peer_postgres_url  # noqa: F401 (a fixture)
from tests.imports.test_import_langgraph import _import

pytestmark = pytest.mark.django_db(transaction=True)


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(checkpointer):
    """Asks a person before it acts: ``ask`` stops at an interrupt, the answer goes to ``act``."""

    def ask(state: State) -> dict:
        return {"log": [f"asked, answer {interrupt('go on?')}"]}

    def act(state: State) -> dict:
        return {"log": ["acted"]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_node("act", act)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=checkpointer)


def _stop_at_the_interrupt(saver) -> None:
    result = _graph(saver).invoke({"log": ["start"]}, {"configurable": {"thread_id": "t1", "user_id": "ana"}})
    assert result["__interrupt__"][0].value == "go on?"


@pytest.fixture
def sqlite_thread(tmp_path):
    path = str(tmp_path / "graph.db")
    connection = sqlite3.connect(path, check_same_thread=False)
    _stop_at_the_interrupt(SqliteSaver(connection))
    connection.close()
    return "langgraph-sqlite", path


@pytest.fixture
def postgres_thread(peer_postgres_url):  # noqa: F811 (the fixture imported above)
    url = "postgresql://" + peer_postgres_url.split("://", 1)[1]
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        _stop_at_the_interrupt(saver)
    return "langgraph-postgres", url


@pytest.mark.parametrize("store", ["sqlite_thread", "postgres_thread"])
def test_an_imported_thread_is_resumed_and_invoked_again(live_server, tenant, store, request):
    kind, location = request.getfixturevalue(store)
    _import(tenant, kind, location, "--quiet")
    config = {"configurable": {"thread_id": "t1"}}

    with AgentStateSaver(live_server.url, api_key_new(tenant), default_user_id="nobody") as saver:
        graph = _graph(saver)
        assert graph.get_state(config).next == ("ask",)
        resumed = graph.invoke(Command(resume="yes"), config)
        assert resumed["log"] == ["start", "asked, answer yes", "acted"]
        assert "__interrupt__" in graph.invoke({"log": ["again"]}, config)
        again = graph.invoke(Command(resume="no"), config)

    assert again["log"] == ["start", "asked, answer yes", "acted", "again", "asked, answer no", "acted"]


@pytest.mark.needs_backends("openai_agents")
def test_an_imported_sdk_session_is_appended_to_and_read_back(live_server, tenant, tmp_path):
    path = str(tmp_path / "sdk.db")
    before = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    more = [{"role": "user", "content": "and now?"}, {"type": "function_call_output", "call_id": "c", "output": "x"}]

    async def fill():
        session = SQLiteSession("chat-1", path)
        await session.add_items(before)
        session.close()

    asyncio.run(fill())
    _import(tenant, "openai-sqlite", path, "--quiet")
    key = api_key_new(tenant)

    async def go_on():
        session = AgentStateSession("chat-1", base_url=live_server.url, api_key=key, user_id="ops")
        await session.add_items(more)
        popped = await session.pop_item()
        await session.add_items([popped])
        return await session.get_items(), await session.get_items(limit=3)

    assert asyncio.run(go_on()) == (before + more, (before + more)[1:])
