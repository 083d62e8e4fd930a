"""``agentstate mcp`` over stdio (a subprocess, as desktop clients start it) and over streamable
HTTP (its own uvicorn process, each request's bearer key), called with the mcp SDK's client; and
the MCP process imports no Django."""

from __future__ import annotations

import subprocess
import sys

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
        "import sys, agentstate.cli, agentstate.integrations.mcp_server as m\n"
        "m.build_server(m.Settings(api_url='http://127.0.0.1:1'))\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in "
        "{'django', 'rest_framework', 'sessions_app', 'userdata_app', 'agentstate_site'}))"
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


@pytest.mark.asyncio
async def test_streamable_http_takes_each_callers_bearer_key(stored):
    with http_server(stored.url, "--user", PERSON) as endpoint:
        bearer = httpx2.AsyncClient(headers={"Authorization": f"Bearer {stored.tenant_key}"})
        async with bearer, Client(streamable_http_client(endpoint, http_client=bearer)) as mcp:
            assert len((await mcp.list_tools()).tools) == 5
            sessions = structured(await mcp.call_tool("list_sessions", {}))["sessions"]
            assert [s["session_id"] for s in sessions] == ["chat-1"]
            found = structured(await mcp.call_tool("search_memory", {"query": "vegan"}))["memories"]
            assert found == []  # Bo's word: not in Ana's memory

        # Behind a proxy the Host is the public name: served all the same.
        proxied = httpx2.AsyncClient(headers={"Authorization": f"Bearer {stored.tenant_key}", "Host": "agents.example"})
        async with proxied, Client(streamable_http_client(endpoint, http_client=proxied)) as mcp:
            assert structured(await mcp.call_tool("list_sessions", {}))["sessions"][0]["session_id"] == "chat-1"

        wrong = httpx2.AsyncClient(headers={"Authorization": "Bearer not-a-key"})
        async with wrong, Client(streamable_http_client(endpoint, http_client=wrong)) as mcp:
            assert "agentstate refused (401" in error(await mcp.call_tool("list_sessions", {}))

        async with httpx.AsyncClient() as http:
            answer = await http.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 401
        assert "Authorization: Bearer" in answer.json()["error"]["message"]
        async with httpx.AsyncClient() as http:  # a proxy's health check needs no key
            assert (await http.get(endpoint.replace("/mcp", "/livez"))).json() == {"status": "ok"}
