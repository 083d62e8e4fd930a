"""The MCP server as docs/SCALING.md deploys it: two processes behind the recipe's HAProxy (its
`/mcp` route), called over HTTPS by the mcp SDK's own streamable-HTTP client with a person key as
the bearer token; the proxy's health check takes a stopped process out and the other answers."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.multinode.servers import needs_servers, tenant_new, tls

pytestmark = [*needs_servers, pytest.mark.skipif(not os.environ.get("AGENTSTATE_MULTINODE_MCP"), reason="no MCP")]
MCP = os.environ.get("AGENTSTATE_MULTINODE_MCP", "")  # the proxy's /mcp
WORK = Path(os.environ.get("MULTINODE_WORK", "."))
TOOLS = {"forget", "list_sessions", "recent_history", "remember", "search_memory"}


@dataclass(frozen=True)
class People:
    ana: str  # a person key of each, in one tenant
    bo: str


@pytest.fixture
def people() -> People:
    from agentstate.tenancy.services import api_key_create

    tenant = tenant_new()
    ana, bo = (api_key_create(tenant=tenant, name="mcp", user_id=user)[1] for user in ("ana", "bo"))
    return People(ana=ana, bo=bo)


async def _session(key: str, tool: str | None, arguments: dict) -> object:
    bearer = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, verify=tls(), timeout=30)
    async with bearer, Client(streamable_http_client(MCP, http_client=bearer)) as mcp:
        if tool is None:
            return {listed.name for listed in (await mcp.list_tools()).tools}
        result = await mcp.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def call(key: str, tool: str | None, arguments: dict | None = None) -> Any:
    """One tool call through the proxy (None: list the tools), as an MCP client makes it: a
    connection of its own, the key as its bearer token."""
    return asyncio.run(_session(key, tool, arguments or {}))


def texts(found: dict) -> list[str]:
    return [memory["value"]["text"] for memory in found["memories"]]


def test_a_person_key_reaches_its_own_memory_through_the_proxy_and_nothing_else(people):
    assert call(people.ana, None) == TOOLS
    word = f"quince{uuid.uuid4().hex[:8]}"
    call(people.ana, "remember", {"text": f"ana likes {word}"})
    assert texts(call(people.ana, "search_memory", {"query": word})) == [f"ana likes {word}"]
    assert texts(call(people.bo, "search_memory", {"query": word})) == []

    answer = httpx.post(MCP, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, verify=tls())
    assert answer.status_code == 401
    assert "Authorization: Bearer" in answer.json()["error"]["message"]


def test_the_proxy_takes_a_stopped_mcp_process_out_and_the_other_answers(people):
    os.kill(int((WORK / "mcp1.pid").read_text()), signal.SIGTERM)
    log = WORK / "haproxy.log"
    deadline = time.monotonic() + 10
    while "Server mcp/mcp1 is DOWN" not in log.read_text():
        assert time.monotonic() < deadline, "HAProxy did not mark the stopped MCP process down"
        time.sleep(0.2)
    for n in range(4):  # round robin would reach mcp1 every other call
        call(people.ana, "remember", {"text": f"still here {n}", "key": f"k{n}"})
    found = call(people.ana, "search_memory", {"query": "still"})
    assert sorted(texts(found)) == [f"still here {n}" for n in range(4)]
