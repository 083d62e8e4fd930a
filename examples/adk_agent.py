"""An ADK agent with a tool, run for three turns on agentstate through ADK's own Runner.

The model is scripted (a ``BaseLlm`` returning canned responses: no network, no API key for a
model), so this runs anywhere an agentstate server does:

    AGENTSTATE_URL=http://127.0.0.1:8000 AGENTSTATE_API_KEY=<key> python examples/adk_agent.py

The one line that puts an ADK app on agentstate is the session service below.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from agentstate.integrations.adk import AgentStateSessionService

APP_NAME = "weather_app"


def get_weather(city: str, tool_context: ToolContext) -> dict:
    """Returns today's weather in a city (canned), and remembers the user's last city."""
    tool_context.state["user:last_city"] = city
    tool_context.state["lookups"] = tool_context.state.get("lookups", 0) + 1
    return {"city": city, "forecast": "sunny", "temperature_c": 21}


class ScriptedModel(BaseLlm):
    """Answers from a script: a tool call when the user asks about the weather, then a sentence
    built from the tool's result; a plain reply otherwise."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts[0]
        if last.function_response is not None:
            result = last.function_response.response
            text = f"It is {result['forecast']} in {result['city']}, {result['temperature_c']} °C."
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
        elif last.text and "weather" in last.text.lower():
            city = last.text.rstrip("?").split(" in ")[-1]
            call = types.FunctionCall(name="get_weather", args={"city": city})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
        else:
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Happy to help.")]))


def build_agent(model: BaseLlm | None = None) -> LlmAgent:
    return LlmAgent(
        name="weather_agent",
        model=model or ScriptedModel(),
        instruction="Answer weather questions.",
        tools=[get_weather],
    )


TURNS = ["What is the weather in Paris?", "Thanks!", "And the weather in Oslo?"]


async def main(base_url: str, api_key: str, *, user_id: str = "user-1", session_id: str = "trip-planning") -> list[str]:
    """Runs the three turns; returns the agent's final answers."""
    session_service = AgentStateSessionService(base_url, api_key)  # the one-line switch
    runner = Runner(app_name=APP_NAME, agent=build_agent(), session_service=session_service)
    await session_service.create_session(app_name=APP_NAME, user_id=user_id, session_id=session_id)
    answers = []
    for text in TURNS:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(user_id=user_id, session_id=session_id, new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                answers.append(event.content.parts[0].text)
    await session_service.close()
    return answers


if __name__ == "__main__":
    for answer in asyncio.run(
        main(os.environ.get("AGENTSTATE_URL", "http://127.0.0.1:8000"), os.environ["AGENTSTATE_API_KEY"])
    ):
        print(answer)
