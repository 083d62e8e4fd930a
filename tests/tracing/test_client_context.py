"""The client's trace context (agentstate.client.tracing): sent when a span is current, and the
client unchanged where OpenTelemetry is not installed."""

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx
from opentelemetry.sdk.trace import TracerProvider

from agentstate.client import AgentStateClient
from agentstate.integrations.adk import AgentStateSessionService

ROOT = Path(__file__).resolve().parents[2]
SENT: list[httpx.Headers] = []


def answer(request: httpx.Request) -> httpx.Response:
    SENT.append(request.headers)
    return httpx.Response(204)


def test_a_request_carries_the_current_spans_traceparent_and_none_without_a_span():
    SENT.clear()
    tracer = TracerProvider().get_tracer("caller")
    with AgentStateClient("http://agentstate", "key", transport=httpx.MockTransport(answer)) as client:
        client.session_delete("u1", "s1")
        with tracer.start_as_current_span("step") as step:
            client.session_delete("u1", "s1")
    assert "traceparent" not in SENT[0]
    ids = step.get_span_context()
    assert SENT[1]["traceparent"] == f"00-{ids.trace_id:032x}-{ids.span_id:016x}-{ids.trace_flags:02x}"


def test_adks_services_send_it_too():
    """ADK's services keep an httpx client of their own (agentstate.integrations.adk)."""
    SENT.clear()
    tracer = TracerProvider().get_tracer("caller")

    def listing(request: httpx.Request) -> httpx.Response:
        SENT.append(request.headers)
        return httpx.Response(200, json={"sessions": [], "next": None})

    async def list_in_a_step() -> None:
        service = AgentStateSessionService("http://agentstate", "key", transport=httpx.MockTransport(listing))
        with tracer.start_as_current_span("step"):
            await service.list_sessions(app_name="app", user_id="u1")
        await service.close()

    asyncio.run(list_in_a_step())
    assert SENT[0]["traceparent"].startswith("00-")


WITHOUT_OPENTELEMETRY = """
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Absent())
import httpx
from agentstate.client import AgentStateClient
from agentstate.integrations.adk import AgentStateSessionService
sent = []
def answer(request):
    sent.append(request.headers)
    return httpx.Response(204)
with AgentStateClient("http://agentstate", "key", transport=httpx.MockTransport(answer)) as client:
    client.session_delete("u1", "s1")
assert "traceparent" not in sent[0] and "opentelemetry" not in sys.modules
"""


def test_the_client_works_where_opentelemetry_is_not_installed():
    run = subprocess.run(
        [sys.executable, "-c", WITHOUT_OPENTELEMETRY], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
