"""``agentstate mcp`` over stdio (a subprocess, as desktop clients start it) and over streamable
HTTP (its own uvicorn process, each request's bearer key), called with the mcp SDK's client; and
the MCP process imports no Django."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.conftest import OTHER, PERSON
from tests.mcp.servers import http_server, stdio_params
from tests.mcp.test_tools import error, structured

pytestmark = [pytest.mark.slow, pytest.mark.servers]


def test_the_mcp_process_imports_no_django():
    script = (
        "import sys, agentstate_site.cli, agentstate.integrations.mcp_server as m\n"
        "m.build_server(m.Settings(api_url='http://127.0.0.1:1'))\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in "
        "{'django', 'rest_framework', 'sessions_app', 'userdata_app', 'agentstate_site'} "
        "and n not in {'agentstate_site', 'agentstate_site.cli'}))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.asyncio
async def test_stdio_serves_the_person_fixed_at_start(stored):
    async with Client(stdio_params(stored.url, stored.tenant_key, "--user", PERSON)) as mcp:
        assert len((await mcp.list_tools()).tools) == 5
        found = structured(await mcp.call_tool("search_memory", {"query": "figs"}))["memories"]
        assert [m["value"]["text"] for m in found] == ["ana is vegetarian and likes figs"]
        history = structured(await mcp.call_tool("recent_history", {"session_id": "chat-1", "count": 1}))
        assert [m["content"] for m in history["messages"]] == [f"{PERSON} says 5"]
        assert "Unknown argument(s) user_id" in error(await mcp.call_tool("list_sessions", {"user_id": OTHER}))
        assert "limit" in error(await mcp.call_tool("search_memory", {"query": "figs", "limit": 10_000}))


@contextlib.asynccontextmanager
async def connected(endpoint: str, key: str, **headers: str) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending ``key`` as a bearer token on every request."""
    bearer = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}", **headers})
    async with bearer, Client(streamable_http_client(endpoint, http_client=bearer)) as mcp:
        yield mcp


async def texts(endpoint: str, key: str, **headers: str) -> list[str]:
    """The memories found for "figs" by a caller with ``key``."""
    async with connected(endpoint, key, **headers) as mcp:
        found = structured(await mcp.call_tool("search_memory", {"query": "figs"}))["memories"]
    return [m["value"]["text"] for m in found]


@pytest.mark.asyncio
async def test_streamable_http_serves_each_caller_the_person_of_their_bearer_key(stored):
    """One HTTP server for everyone: each request's key says whose data it reaches."""
    with http_server(stored.url) as endpoint:
        async with connected(endpoint, stored.person_keys[PERSON]) as mcp:
            assert len((await mcp.list_tools()).tools) == 5
            sessions = structured(await mcp.call_tool("list_sessions", {}))["sessions"]
            assert [s["session_id"] for s in sessions] == ["chat-1"]
            assert "Unknown argument(s) user_id" in error(await mcp.call_tool("list_sessions", {"user_id": OTHER}))
        assert await texts(endpoint, stored.person_keys[PERSON]) == ["ana is vegetarian and likes figs"]
        assert await texts(endpoint, stored.person_keys[OTHER]) == ["bo is vegan and likes figs"]
        # Behind a proxy the Host is the public name: served all the same.
        assert await texts(endpoint, stored.person_keys[OTHER], Host="agents.example") == ["bo is vegan and likes figs"]

        async with connected(endpoint, stored.tenant_key) as mcp:
            assert "--user" in error(await mcp.call_tool("list_sessions", {}))  # a tenant key names no person
        async with connected(endpoint, "not-a-key") as mcp:
            assert "agentstate refused (401" in error(await mcp.call_tool("list_sessions", {}))

        async with httpx.AsyncClient() as http:
            answer = await http.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert answer.status_code == 401
            assert "Authorization: Bearer" in answer.json()["error"]["message"]
            # A proxy's health check needs no key.
            assert (await http.get(endpoint.replace("/mcp", "/livez"))).json() == {"status": "ok"}
