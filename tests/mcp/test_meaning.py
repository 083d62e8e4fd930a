"""``agentstate mcp --embed``: the MCP process embeds, remember stores each text's vector and
search_memory ranks by the server's cosine similarity; a bad --embed stops the start with a clear
message, and an embedder failing at call time is the tool's error."""

from __future__ import annotations

import dataclasses

import pytest
from mcp import Client

from agentstate.integrations.mcp_server import Settings, build_server, embedder_named, main
from tests.mcp.conftest import PERSON
from tests.mcp.test_tools import error


@pytest.mark.asyncio
async def test_search_memory_ranks_by_meaning_with_an_embedder(stored):
    embedder = embedder_named("tests.mcp.embedders:letters", dims=26)
    server_settings = Settings(api_url=stored.url, api_key=stored.tenant_key, user_id=PERSON, embedder=embedder)
    async with Client(build_server(server_settings)) as mcp:
        for key, text in [("jazz", "jazz quiz"), ("bread", "banana bread"), ("tea", "green tea")]:
            assert not (await mcp.call_tool("remember", {"text": text, "key": key})).is_error
        # No word of the query is in any memory: only the letters' vectors bring "jazz quiz" first.
        result = await mcp.call_tool("search_memory", {"query": "fizz buzz", "limit": 3})
        assert not result.is_error, result.content
        found = result.structured_content["memories"]
        assert [m["key"] for m in found] == ["jazz", "bread", "tea"]
        assert 0.5 < found[0]["score"] <= 1 and found[0]["score"] > found[1]["score"]
        assert found[0]["namespace"] == ["memories"] and found[0]["value"] == {"text": "jazz quiz"}

    failing = dataclasses.replace(server_settings, embedder=embedder_named("tests.mcp.embedders:broken"))
    async with Client(build_server(failing)) as mcp:
        for tool, arguments in [("remember", {"text": "tea"}), ("search_memory", {"query": "tea"})]:
            assert "embedding quota exceeded" in error(await mcp.call_tool(tool, arguments))


@pytest.mark.parametrize(
    "name, says",
    [
        ("tests.mcp.nowhere:letters", "No module named 'tests.mcp.nowhere'"),
        ("tests.mcp.embedders:missing", "has no attribute 'missing'"),
        ("tests.mcp.embedders:NOT_CALLABLE", "not a function of texts"),
        ("letters", "name it as module:callable"),
    ],
)
def test_a_bad_embed_stops_the_start_with_a_clear_message(name, says, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--embed", name])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
