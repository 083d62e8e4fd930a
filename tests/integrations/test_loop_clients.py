"""Each adapter's async connections end with the event loop that opened them: a program that calls
``asyncio.run`` per step (scripts, tests, ADK's and the SDK's runners) keeps no client, and no
connection to the server, per loop it ran. Counted as this process's open sockets to the live
server, read from /proc."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentstate.integrations.adk import AgentStateSessionService
from agentstate.integrations.langgraph_store import AgentStateStore
from agentstate.integrations.openai_agents import AgentStateSession
from tests.client.keys import api_key_new

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts sockets through /proc"),
]
# A client kept per loop would leave ten connections open, where the assertions allow one: ten loops
# tell the rule apart as well as a hundred (each loop is a request to the live server).
LOOPS = 10


def connections_to(port: int) -> int:
    """This process's TCP sockets whose peer is ``port``: its clients' side of the connections to
    the live server (which runs in this process too, on that port as its own)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
                count += 1
    return count


@pytest.fixture
def key(tenant) -> str:
    return api_key_new(tenant)


@pytest.fixture
def port(live_server) -> int:
    return urlsplit(live_server.url).port


@pytest.fixture
def before(port) -> int:
    """The connections open before the test: none left by an earlier test's garbage."""
    gc.collect()
    return connections_to(port)


def loops_run(call) -> None:
    """``LOOPS`` programs, each its own ``asyncio.run`` of one call through the same adapter."""
    for _ in range(LOOPS):
        asyncio.run(call())


def test_langgraph_store_closes_each_loops_connections_with_it(live_server, key, port, before):
    store = AgentStateStore(live_server.url, key)

    loops_run(lambda: store.aget(("users", "ada"), "missing"))

    assert connections_to(port) <= before + 1


def test_adk_session_service_closes_each_loops_connections_with_it(live_server, key, port, before):
    service = AgentStateSessionService(live_server.url, key)

    loops_run(lambda: service.get_session(app_name="app", user_id="ada", session_id="missing"))

    assert connections_to(port) <= before + 1


def test_openai_agents_session_closes_each_loops_connections_with_it(live_server, key, port, before):
    session = AgentStateSession("chat", base_url=live_server.url, api_key=key, user_id="ada")

    loops_run(session.get_items)

    assert connections_to(port) <= before + 1


def test_a_loop_closed_without_shutting_down_leaves_one_client_not_one_per_loop(live_server, key, port, before):
    """``loop.close()`` alone skips the shutdown that closes a loop's client: the next loop's call
    drops it for the garbage collector, so the adapter holds one client more, not one per loop."""
    store = AgentStateStore(live_server.url, key)
    for _ in range(10):
        loop = asyncio.new_event_loop()
        loop.run_until_complete(store.aget(("users", "ada"), "missing"))
        loop.close()
    gc.collect()

    assert connections_to(port) <= before + 1
    del store  # its last client's socket, which holds a live-server thread and its database connection
    gc.collect()
