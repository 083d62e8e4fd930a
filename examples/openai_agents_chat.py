"""An OpenAI Agents SDK agent whose memory is an agentstate session, then a branch from turn 2.

A scripted model (canned responses, no network) drives the SDK's Runner through three turns, one
with a tool call, on an AgentStateSession; then the conversation branches from turn 2 and goes on
there while the main branch keeps all three turns. Run it against a server:

    AGENTSTATE_URL=http://127.0.0.1:8000 AGENTSTATE_API_KEY=<key> python examples/openai_agents_chat.py
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from agentstate.integrations.openai_agents import AgentStateSession


def say(text: str, n: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg-{n}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def call(name: str, arguments: dict[str, Any], n: int) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc-{n}", call_id=f"call-{n}", type="function_call", name=name, arguments=json.dumps(arguments)
    )


class CannedModel(Model):
    """A Model that answers each call with the next canned output, never the network."""

    def __init__(self, outputs: list[list[Any]]) -> None:
        self.outputs = list(outputs)

    async def get_response(
        self,
        system_instructions,
        input,
        model_settings,
        tools,
        output_schema,
        handoffs,
        tracing,
        *,
        previous_response_id=None,
        conversation_id=None,
        prompt=None,
    ) -> ModelResponse:
        return ModelResponse(output=self.outputs.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this example does not stream")


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city (canned)."""
    return {"Paris": "sunny, 21 C", "Oslo": "snow, -3 C", "Rome": "clear, 18 C"}.get(city, "unknown")


async def main(base_url: str, api_key: str, user_id: str = "ada", session_id: str = "weather-chat") -> dict[str, Any]:
    set_tracing_disabled(True)
    model = CannedModel(
        [
            [say("Hello Ada! Ask me about the weather.", 1)],
            [call("get_weather", {"city": "Paris"}, 2)],
            [say("It is sunny in Paris, 21 C.", 3)],
            [call("get_weather", {"city": "Oslo"}, 4)],
            [say("Snow in Oslo, -3 C.", 5)],
            [call("get_weather", {"city": "Rome"}, 6)],  # on the branch
            [say("Clear skies in Rome, 18 C.", 7)],
        ]
    )
    agent = Agent(
        name="Weather", instructions="Answer weather questions with the tool.", model=model, tools=[get_weather]
    )
    session = AgentStateSession(session_id, base_url=base_url, api_key=api_key, user_id=user_id)

    for question in ("Hi, I am Ada.", "What is the weather in Paris?", "And in Oslo?"):
        result = await Runner.run(agent, question, session=session)
        print(f"user: {question}\nagent: {result.final_output}")

    branch = await session.create_branch_from_turn(2, "rome-instead")  # before turn 2's question
    result = await Runner.run(agent, "What is the weather in Rome?", session=session)
    print(f"[{branch}] user: What is the weather in Rome?\nagent: {result.final_output}")

    on_branch = await session.get_items()
    await session.switch_to_branch("main")
    on_main = await session.get_items()
    branches = await session.list_branches()
    await session.aclose()
    for info in branches:
        print(f"branch {info['branch_id']}: {info['message_count']} items, {info['user_turns']} user turns")
    return {"main": on_main, "branch": on_branch, "branches": branches}


if __name__ == "__main__":
    asyncio.run(main(os.environ.get("AGENTSTATE_URL", "http://127.0.0.1:8000"), os.environ["AGENTSTATE_API_KEY"]))
