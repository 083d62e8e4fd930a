"""The MCP server's five tools, called with the mcp SDK's own client in-process against a live
agentstate (the first test is the quick loop's one MCP test): each tool reaches Ana's data and
never Bo's, bad arguments and REST refusals come back as tool errors with a clear message."""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client

from agentstate.integrations.mcp_server import Settings, build_server
from tests.mcp.conftest import OTHER, PERSON


def structured(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


def error(result) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


@pytest.mark.asyncio
async def test_each_tool_reaches_the_persons_data_only(stored):
    server = build_server(Settings(api_url=stored.url, api_key=stored.tenant_key, user_id=PERSON))
    async with Client(server) as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert set(tools) == {"search_memory", "remember", "forget", "recent_history", "list_sessions"}
        assert all("user_id" not in tool.input_schema["properties"] for tool in tools.values())
        # Each tool and each of its arguments says what it is, for the model that chooses them.
        assert all(tool.description for tool in tools.values())
        arguments = [arg for tool in tools.values() for arg in tool.input_schema["properties"].values()]
        assert all(arg.get("description") for arg in arguments)

        found = structured(await mcp.call_tool("search_memory", {"query": "figs vegan"}))["memories"]
        assert [(m["namespace"], m["key"], m["value"]["text"]) for m in found] == [
            (["notes"], "diet", "ana is vegetarian and likes figs")
        ]
        kept = structured(await mcp.call_tool("remember", {"text": "allergic to walnuts", "key": "allergy"}))
        assert kept == {"namespace": ["memories"], "key": "allergy"}
        found = structured(await mcp.call_tool("search_memory", {"query": "walnuts"}))["memories"]
        assert [m["key"] for m in found] == ["allergy"]
        assert structured(await mcp.call_tool("forget", {"key": "allergy"})) == {
            "deleted": {"namespace": ["memories"], "key": "allergy"}
        }
        assert structured(await mcp.call_tool("search_memory", {"query": "walnuts"}))["memories"] == []
        assert "nothing was deleted" in error(await mcp.call_tool("forget", {"key": "allergy"}))

        history = structured(await mcp.call_tool("recent_history", {"session_id": "chat-1", "count": 2}))
        assert [(m["seq"], m["content"]) for m in history["messages"]] == [
            (4, f"{PERSON} says 4"),
            (5, f"{PERSON} says 5"),
        ]
        sessions = structured(await mcp.call_tool("list_sessions", {}))
        assert [(s["session_id"], s["message_count"]) for s in sessions["sessions"]] == [("chat-1", 5)]

        # Another person is named in no way a tool takes: an undeclared user_id is refused, not ignored.
        assert "Unknown argument(s) user_id" in error(
            await mcp.call_tool("recent_history", {"session_id": "chat-1", "user_id": OTHER})
        )
        assert "Unknown argument(s) user_id" in error(await mcp.call_tool("list_sessions", {"user_id": OTHER}))
        # A namespace is labels under the person: ["users", "bo", ...] is looked for under Ana's.
        assert "nothing was deleted" in error(
            await mcp.call_tool("forget", {"key": "diet", "namespace": ["users", OTHER, "notes"]})
        )
        # Bad arguments: the SDK's validation names the field; a REST 404 passes the server's message.
        assert "count" in error(await mcp.call_tool("recent_history", {"session_id": "chat-1", "count": 0}))
        assert "query" in error(await mcp.call_tool("search_memory", {}))
        assert "agentstate refused (404" in error(await mcp.call_tool("recent_history", {"session_id": "nope"}))

    with_bo = build_server(Settings(api_url=stored.url, api_key=stored.tenant_key, user_id=OTHER))
    async with Client(with_bo) as mcp:
        found = structured(await mcp.call_tool("search_memory", {"query": "figs"}))["memories"]
        assert [m["value"]["text"] for m in found] == ["bo is vegan and likes figs"]


@pytest.mark.slow
@pytest.mark.asyncio
async def test_a_person_key_reaches_its_person_only(stored):
    """The person is the key's own when the server is given none; a person key with another
    person fixed at start is refused by the API, and a tenant key with no person by the server."""
    own = build_server(Settings(api_url=stored.url, api_key=stored.person_keys[PERSON]))
    async with Client(own) as mcp:
        found = structured(await mcp.call_tool("search_memory", {"query": "figs"}))["memories"]
        assert [m["value"]["text"] for m in found] == ["ana is vegetarian and likes figs"]
    elsewhere = build_server(Settings(api_url=stored.url, api_key=stored.person_keys[PERSON], user_id=OTHER))
    async with Client(elsewhere) as mcp:
        assert "agentstate refused (403 person_key)" in error(await mcp.call_tool("list_sessions", {}))
        assert "agentstate refused (403 person_key)" in error(await mcp.call_tool("search_memory", {"query": "figs"}))
    nobody = build_server(Settings(api_url=stored.url, api_key=stored.tenant_key))
    async with Client(nobody) as mcp:
        assert "--user" in error(await mcp.call_tool("list_sessions", {}))


@pytest.fixture
def compliance_key(stored, tenant) -> str:
    from agentstate.tenancy.services import api_key_create

    return api_key_create(tenant=tenant, name="dpo", scope="compliance")[1]


def api_entries(tenant) -> list[tuple[str, str]]:
    from userdata_app.access_log.models import AccessEntry
    from userdata_app.access_log.recorder import hash_of

    person = hash_of(tenant_slug=tenant.slug, user_id=PERSON)
    rows = AccessEntry.objects.filter(tenant=tenant.slug, action="api", subject_hash=person).order_by("seq")
    return [(row.detail["route"], row.detail["status"]) for row in rows]


@pytest.mark.slow
def test_reads_through_mcp_with_a_compliance_key_are_in_the_access_log(stored, compliance_key, tenant):
    from agentstate.integrations.mcp_server import embedder_named

    by_meaning = embedder_named("tests.mcp.embedders:letters", dims=26)

    async def read() -> None:
        server = build_server(Settings(api_url=stored.url, api_key=compliance_key, user_id=PERSON))
        async with Client(server) as mcp:
            structured(await mcp.call_tool("search_memory", {"query": "figs"}))
            structured(await mcp.call_tool("recent_history", {"session_id": "chat-1"}))
        # By meaning the search is a store batch: it names the person too.
        meaning = Settings(api_url=stored.url, api_key=compliance_key, user_id=PERSON, embedder=by_meaning)
        async with Client(build_server(meaning)) as mcp:
            structured(await mcp.call_tool("search_memory", {"query": "figs"}))

    asyncio.run(read())
    assert api_entries(tenant) == [("memory-search", 200), ("message-list", 200), ("store-batch", 200)]
