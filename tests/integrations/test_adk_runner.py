"""ADK's own Runner and web app on agentstate: the example's three turns, two runners racing on one
session, and `adk web`'s FastAPI app built from an agentstate:// URI in services.yaml."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import httpx
import pytest
from google.adk.errors import StaleSessionError
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types

from agentstate.integrations.adk import AgentStateSessionService
from tests.client.conftest import _new_key

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "adk_agent.py"
spec = importlib.util.spec_from_file_location("adk_agent_example", EXAMPLE)
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


@pytest.fixture
def adk_runner_key(transactional_db, tenant) -> str:
    return _new_key(tenant)


@pytest.mark.asyncio
async def test_the_example_runs_three_turns_and_its_events_are_stored(live_server, adk_runner_key):
    answers = await example.main(live_server.url, adk_runner_key)
    assert answers == ["It is sunny in Paris, 21 °C.", "Happy to help.", "It is sunny in Oslo, 21 °C."]
    async with httpx.AsyncClient(base_url=live_server.url, headers={"X-Api-Key": adk_runner_key}) as http:
        session = (await http.get("/api/v1/adk/apps/weather_app/users/user-1/sessions/trip-planning/")).json()
    events = session["events"]
    # Turn 1 and 3: user message, function call, function response, answer; turn 2: message, answer.
    assert [e["author"] for e in events] == [
        "user",
        "weather_agent",
        "weather_agent",
        "weather_agent",
        "user",
        "weather_agent",
        "user",
        "weather_agent",
        "weather_agent",
        "weather_agent",
    ]
    assert events[1]["content"]["parts"][0]["function_call"]["args"] == {"city": "Paris"}
    assert events[2]["content"]["parts"][0]["function_response"]["response"]["forecast"] == "sunny"
    assert events[2]["actions"]["state_delta"] == {"user:last_city": "Paris", "lookups": 1}
    assert session["state"] == {"lookups": 2, "user:last_city": "Oslo"}
    assert session["last_update_time"] == events[-1]["timestamp"]


class GatedModel(example.ScriptedModel):
    """Waits for the gate before answering: lets a second runner write in between."""

    gate: asyncio.Event

    async def generate_content_async(self, llm_request, stream=False):
        await self.gate.wait()
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="late answer")]))


@pytest.mark.asyncio
async def test_two_runners_on_one_session_the_stale_one_is_refused(live_server, adk_runner_key):
    service_a = AgentStateSessionService(live_server.url, adk_runner_key)
    service_b = AgentStateSessionService(live_server.url, adk_runner_key)
    gate = asyncio.Event()
    runner_a = Runner(app_name="race", agent=example.build_agent(GatedModel(gate=gate)), session_service=service_a)
    runner_b = Runner(app_name="race", agent=example.build_agent(), session_service=service_b)
    await service_a.create_session(app_name="race", user_id="u1", session_id="s1")

    async def run(runner, text):
        message = types.Content(role="user", parts=[types.Part(text=text)])
        return [e async for e in runner.run_async(user_id="u1", session_id="s1", new_message=message)]

    slow = asyncio.create_task(run(runner_a, "hello from A"))
    while not (await service_b.get_session(app_name="race", user_id="u1", session_id="s1")).events:
        await asyncio.sleep(0.01)  # A stored its user message and waits for its model
    await run(runner_b, "hello from B")  # B reads the session after A's message and answers
    gate.set()
    with pytest.raises(StaleSessionError):
        await slow  # A's answer is based on a session B has moved on from
    stored = await service_b.get_session(app_name="race", user_id="u1", session_id="s1")
    assert [e.content.parts[0].text for e in stored.events] == ["hello from A", "hello from B", "Happy to help."]
    await service_a.close()
    await service_b.close()


def test_adk_web_app_uses_agentstate_from_services_yaml(live_server, adk_runner_key, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient
    from google.adk.cli import service_registry
    from google.adk.cli.fast_api import get_fast_api_app

    # A registry as `adk web` starts with (importing the adapter registers the scheme too).
    monkeypatch.setattr(service_registry, "_service_registry_instance", None)
    monkeypatch.setenv("AGENTSTATE_API_KEY", adk_runner_key)
    (tmp_path / "services.yaml").write_text(
        "services:\n  - scheme: agentstate\n    type: session\n"
        "    class: agentstate.integrations.adk.AgentStateSessionService\n"
    )
    built = []  # the services ADK builds, closed at the end (a live-server thread per open connection)
    init = AgentStateSessionService.__init__
    monkeypatch.setattr(
        AgentStateSessionService, "__init__", lambda self, *a, **k: (init(self, *a, **k), built.append(self))[0]
    )
    app = get_fast_api_app(
        agents_dir=str(tmp_path),
        session_service_uri=live_server.url.replace("http://", "agentstate://"),
        web=False,
    )
    with TestClient(app) as web:
        created = web.post("/apps/weather_app/users/u7/sessions", json={"state": {"user:plan": "pro"}})
        assert created.status_code == 200, created.text
        session_id = created.json()["id"]
        assert web.get(f"/apps/weather_app/users/u7/sessions/{session_id}").json()["state"] == {"user:plan": "pro"}
        assert built and all(isinstance(service, AgentStateSessionService) for service in built)
        for service in built:
            web.portal.call(service.close)
    with httpx.Client(base_url=live_server.url, headers={"X-Api-Key": adk_runner_key}) as http:
        stored = http.get(f"/api/v1/adk/apps/weather_app/users/u7/sessions/{session_id}/")
        assert stored.status_code == 200 and stored.json()["state"] == {"user:plan": "pro"}
        assert http.get("/api/v1/adk/apps/weather_app/users/u7/state/").json() == {"state": {"plan": "pro"}}
