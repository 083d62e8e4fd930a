"""The MCP server as each framework consumes it, each agent with a scripted model (no network, no
mock of the framework): ADK's ``McpToolset`` and the Agents SDK's ``MCPServerStdio`` start
``agentstate mcp`` over stdio, and the SDK's ``MCPServerStreamableHttp`` calls it over HTTP with a
person's key; the model's tool calls reach the person's data, and a delete under a legal hold comes
back to the model as the tool's error."""

from __future__ import annotations

import json

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from agents.testing import ScriptedModel, assistant_message, function_call
from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
from google.genai import types

from agentstate.holds import services as holds
from tests.mcp.conftest import OTHER, PERSON
from tests.mcp.servers import http_server, stdio_params

pytestmark = [pytest.mark.slow, pytest.mark.servers]


class MemoryModel(BaseLlm):
    """Calls search_memory with the user's words, then answers with what the tool returned."""

    model: str = "scripted"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False):
        part = llm_request.contents[-1].parts[0]
        if part.function_response is not None:
            text = json.dumps(part.function_response.response, default=str)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
        else:
            call = types.FunctionCall(name="search_memory", args={"query": part.text})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


@pytest.mark.asyncio
async def test_an_adk_agent_searches_the_persons_memory_through_mcp_toolset(stored):
    toolset = McpToolset(
        connection_params=StdioConnectionParams(
            server_params=stdio_params(stored.url, stored.tenant_key, "--user", PERSON), timeout=30
        )
    )
    agent = LlmAgent(name="memory_agent", model=MemoryModel(), instruction="Use the memory.", tools=[toolset])
    runner = InMemoryRunner(agent=agent, app_name="mcp_app")
    try:
        session = await runner.session_service.create_session(app_name="mcp_app", user_id="any")
        message = types.Content(role="user", parts=[types.Part(text="figs")])
        events = [e async for e in runner.run_async(user_id="any", session_id=session.id, new_message=message)]
    finally:
        await toolset.close()
    answer = events[-1].content.parts[0].text
    assert "ana is vegetarian and likes figs" in answer
    assert "vegan" not in answer


@pytest.fixture
def held(stored, tenant):
    holds.legal_hold_place(tenant=tenant, user_id=PERSON, reference="CASE-7", reason="litigation")
    return stored


@pytest.mark.asyncio
async def test_an_agents_sdk_agent_remembers_and_is_refused_a_held_forget(held):
    set_tracing_disabled(True)
    model = ScriptedModel(
        [
            [function_call("remember", {"text": "prefers window seats", "key": "seat"}, call_id="c1")],
            [function_call("forget", {"key": "diet", "namespace": ["notes"]}, call_id="c2")],
            [assistant_message("Kept the seat; the diet note is held.", item_id="m1")],
        ]
    )
    params = stdio_params(held.url, held.tenant_key, "--user", PERSON)
    async with MCPServerStdio(params=params.model_dump(), client_session_timeout_seconds=30) as server:
        agent = Agent(name="a", instructions="help", model=model, mcp_servers=[server])
        result = await Runner.run(agent, "Remember my seat, forget my diet.")
    assert result.final_output == "Kept the seat; the diet note is held."
    outputs = [str(item.output) for item in result.new_items if item.type == "tool_call_output_item"]
    assert '"key":"seat"' in outputs[0].replace(" ", "")
    assert "agentstate refused (409 held): A legal hold (CASE-7) keeps this user's memories" in outputs[1]
    async with MCPServerStdio(params=params.model_dump(), client_session_timeout_seconds=30) as server:
        found = await server.call_tool("search_memory", {"query": "vegetarian window"})
    assert {m["key"] for m in json.loads(found.content[0].text)["memories"]} == {"diet", "seat"}


@pytest.mark.asyncio
async def test_an_agents_sdk_agent_reads_history_over_http_with_its_persons_key(stored):
    set_tracing_disabled(True)
    model = ScriptedModel(
        [
            [function_call("recent_history", {"session_id": "chat-1", "count": 2}, call_id="c1")],
            [assistant_message("You said 4 and 5.", item_id="m1")],
        ]
    )
    with http_server(stored.url) as endpoint:
        headers = {"Authorization": f"Bearer {stored.person_keys[OTHER]}"}
        async with MCPServerStreamableHttp(params={"url": endpoint, "headers": headers}) as server:
            agent = Agent(name="a", instructions="help", model=model, mcp_servers=[server])
            result = await Runner.run(agent, "What did I say last?")
    output = next(item.output for item in result.new_items if item.type == "tool_call_output_item")
    assert output["type"] == "text"  # the tool's one text content, as the SDK hands it to the model
    assert [m["content"] for m in json.loads(output["text"])["messages"]] == [f"{OTHER} says 4", f"{OTHER} says 5"]
