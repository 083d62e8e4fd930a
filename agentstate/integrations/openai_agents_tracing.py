"""The OpenAI Agents SDK's traces as OpenTelemetry spans, so that agentstate's calls made during an
agent's step (AgentStateSession's reads and writes, any agentstate client call in a tool) are
children of that step in one trace, down to the service's SQL statements::

    from agents import add_trace_processor
    from agentstate.integrations.openai_agents_tracing import OpenTelemetryTracingProcessor

    add_trace_processor(OpenTelemetryTracingProcessor())  # beside the SDK's own exporter

Each SDK trace becomes a span (a child of the OpenTelemetry span current when the run began, if
any), each SDK span a child of its parent's, named by kind and by the agent's, tool's or
guardrail's name; both carry the SDK's ids (``openai_agents.trace_id``, ``openai_agents.span_id``).
Nothing the model read or wrote is copied into them. Needs ``opentelemetry-api`` (your
OpenTelemetry setup installs it) and exports through the tracer provider you configured.
"""

from __future__ import annotations

from typing import Any

from agents.tracing import Span, Trace, TracingProcessor, get_current_span, get_current_trace
from opentelemetry import trace as otel
from opentelemetry.context import Context
from opentelemetry.trace import Status, StatusCode

from agentstate.client.tracing import context_source_add, context_source_remove


class OpenTelemetryTracingProcessor(TracingProcessor):
    """Mirrors SDK traces and spans as OpenTelemetry spans, and makes the SDK's current span the
    one agentstate's clients send as the caller's (``agentstate.client.tracing``)."""

    def __init__(self, tracer_provider: otel.TracerProvider | None = None) -> None:
        self._tracer = otel.get_tracer(__name__, tracer_provider=tracer_provider)
        self._spans: dict[str, otel.Span] = {}  # by SDK trace id or span id, while it is open
        context_source_add(self.current_context)

    def on_trace_start(self, trace: Trace) -> None:
        self._spans[trace.trace_id] = self._tracer.start_span(
            trace.name, attributes={"openai_agents.trace_id": trace.trace_id}
        )

    def on_trace_end(self, trace: Trace) -> None:
        span = self._spans.pop(trace.trace_id, None)
        if span is not None:
            span.end()

    def on_span_start(self, span: Span[Any]) -> None:
        parent = self._spans.get(span.parent_id or span.trace_id)
        self._spans[span.span_id] = self._tracer.start_span(
            _name_of(span),
            context=otel.set_span_in_context(parent) if parent is not None else None,
            attributes={
                "openai_agents.span_type": span.span_data.type,
                "openai_agents.span_id": span.span_id,
                "openai_agents.trace_id": span.trace_id,
            },
        )

    def on_span_end(self, span: Span[Any]) -> None:
        mirrored = self._spans.pop(span.span_id, None)
        if mirrored is None:
            return
        if span.error:
            mirrored.set_status(Status(StatusCode.ERROR))  # no description: an error's message may quote data
        mirrored.end()

    def current_context(self) -> Context | None:
        """The context of the SDK's current span (or trace) as this processor mirrors it; None
        when no SDK trace of its is running here."""
        current = get_current_span()
        key = current.span_id if current is not None else getattr(get_current_trace(), "trace_id", None)
        mirrored = self._spans.get(key) if key else None
        return otel.set_span_in_context(mirrored) if mirrored is not None else None

    def shutdown(self) -> None:
        context_source_remove(self.current_context)
        for span in self._spans.values():
            span.end()
        self._spans.clear()

    def force_flush(self) -> None:
        """Spans are exported by the tracer provider's processors: flush that provider instead."""


def _name_of(span: Span[Any]) -> str:
    data = span.span_data
    if data.type == "handoff":
        return f"handoff {getattr(data, 'from_agent', None) or '?'} -> {getattr(data, 'to_agent', None) or '?'}"
    name = getattr(data, "name", None)
    return f"{data.type} {name}" if isinstance(name, str) and name else data.type
