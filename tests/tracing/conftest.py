import pytest
from django.db import connections
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentstate_site.tracing import tracing_start, tracing_stop


@pytest.fixture
def server_spans(transactional_db):
    """Tracing on in this process, as the OTLP setting turns it on in a worker, with the service's
    spans kept in memory. Connections open before it are closed (a worker opens its own after
    tracing starts), and a Django test client made after it goes through the instrumentation."""
    spans = InMemorySpanExporter()
    tracing_start(processor=SimpleSpanProcessor(spans))
    connections.close_all()
    yield spans
    tracing_stop()
    connections.close_all()
