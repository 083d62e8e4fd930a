"""The caller's trace context crosses to the service (agentstate.client.tracing): a LangGraph step
on AgentStateSaver, traced in the caller, finds the service's request spans under its own span."""

from typing import TypedDict

import pytest
from django.db import connection
from langgraph.graph import END, START, StateGraph
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentstate.integrations.langgraph import AgentStateSaver
from tests.tracing.conftest import InProcessServer


@pytest.fixture
def caller_spans():
    """The caller's own OpenTelemetry, apart from the service's: its spans in memory."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield provider.get_tracer("agent"), spans
    provider.shutdown()


class Count(TypedDict):
    count: int


def ancestors(span, by_id):
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        yield span


def test_a_langgraph_steps_checkpoint_calls_are_spans_under_the_callers_step(server_spans, caller_spans, tenant):
    from agentstate.tenancy.services import api_key_create

    tracer, spans = caller_spans
    builder = StateGraph(Count)
    builder.add_node("step", lambda state: {"count": state["count"] + 1})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    key = api_key_create(tenant=tenant, name="graph")[1]
    with AgentStateSaver("http://testserver", key, default_user_id="alice", transport=InProcessServer()) as saver:
        graph = builder.compile(checkpointer=saver)
        with tracer.start_as_current_span("agent step") as step:
            assert graph.invoke({"count": 0}, {"configurable": {"thread_id": "traced"}}) == {"count": 1}
        untraced = graph.invoke({"count": 5}, {"configurable": {"thread_id": "untraced"}})  # no span current
    assert untraced == {"count": 6}
    assert [span.name for span in spans.get_finished_spans()] == ["agent step"]  # the caller's side exported

    served = [span for span in server_spans.get_finished_spans() if span.kind.name == "SERVER"]
    checkpoint_puts = [span for span in served if span.name == "POST /api/v1/langgraph/checkpoints/"]
    assert checkpoint_puts, [span.name for span in served]
    joined = [span for span in served if span.context.trace_id == step.get_span_context().trace_id]
    assert joined and all(span.parent.span_id == step.get_span_context().span_id for span in joined)
    assert {span.name for span in joined} >= {span.name for span in checkpoint_puts}
    # The untraced run's requests start traces of their own (no span of the caller's was current).
    assert len(served) > len(joined)
    assert all(span.parent is None for span in served if span not in joined)
    # On PostgreSQL the service's SQL statements are in the caller's trace too, under its requests.
    by_id = {span.context.span_id: span for span in server_spans.get_finished_spans()}
    statements = [span for span in by_id.values() if span.attributes.get("db.system") == "postgresql"]
    in_step = [span for span in statements if span.context.trace_id == step.get_span_context().trace_id]
    assert len(in_step) >= len(joined) if connection.vendor == "postgresql" else not statements
    assert all(any(a in joined for a in ancestors(span, by_id)) for span in in_step)
