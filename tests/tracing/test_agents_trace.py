"""OpenTelemetryTracingProcessor (agentstate.integrations.openai_agents_tracing): an Agents SDK run
on AgentStateSession is one trace, the session's calls to the service inside the agent's step."""

import asyncio

import pytest
from agents import Agent, Runner, set_trace_processors, set_tracing_disabled, trace
from agents.testing import ScriptedModel, assistant_message
from agents.tracing import get_trace_provider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentstate.integrations.openai_agents import AgentStateSession
from agentstate.integrations.openai_agents_tracing import OpenTelemetryTracingProcessor
from tests.tracing.conftest import InProcessServer


@pytest.fixture
def agent_spans():
    """The SDK's traces through the processor alone (not to OpenAI), into the caller's own provider."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    processor = OpenTelemetryTracingProcessor(tracer_provider=provider)
    was_disabled = bool(getattr(get_trace_provider(), "_disabled", True))  # restored for the other tests
    set_trace_processors([processor])
    set_tracing_disabled(False)
    yield spans
    set_tracing_disabled(was_disabled)
    set_trace_processors([])
    processor.shutdown()


async def one_turn(session: AgentStateSession) -> str:
    agent = Agent(name="helper", instructions="help", model=ScriptedModel([[assistant_message("Hello!")]]))
    try:
        # The SDK reads the session's history before it starts a run's trace: a trace of the
        # caller's around the run holds that read too.
        with trace("conversation"):
            return (await Runner.run(agent, "Hi", session=session)).final_output
    finally:
        await session.aclose()


def test_the_sessions_calls_are_spans_inside_the_agents_step(server_spans, agent_spans, tenant):
    from agentstate.tenancy.services import api_key_create

    key = api_key_create(tenant=tenant, name="agents")[1]
    session = AgentStateSession(
        "chat", base_url="http://testserver", api_key=key, user_id="ada", transport=InProcessServer()
    )
    assert asyncio.run(one_turn(session)) == "Hello!"

    caller = agent_spans.get_finished_spans()
    (workflow,) = [span for span in caller if span.parent is None]
    (step,) = [span for span in caller if span.name == "agent helper"]
    assert workflow.attributes["openai_agents.trace_id"].startswith("trace_")
    served = [span for span in server_spans.get_finished_spans() if span.kind.name == "SERVER"]
    assert served and all(span.context.trace_id == workflow.context.trace_id for span in served)
    parents = {span.parent.span_id for span in served}
    assert parents <= {span.context.span_id for span in caller}
    # The history read under the run's trace; the model's answer saved inside the agent's step.
    assert served[0].name.startswith("GET") and served[0].parent.span_id == workflow.context.span_id
    assert served[-1].name.startswith("POST") and served[-1].parent.span_id == step.context.span_id
