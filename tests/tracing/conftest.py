import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.core.handlers.wsgi import WSGIHandler
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


class InProcessServer(httpx.WSGITransport, httpx.AsyncBaseTransport):
    """The service in this process, answering on a thread of its own as a live server does: that
    thread knows of the caller's spans only what a request's headers say. One request at a time;
    for sync and async clients."""

    def __init__(self) -> None:
        super().__init__(app=WSGIHandler())  # made after tracing started: its middleware is traced
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="server")

    def _answered(self, request: httpx.Request) -> httpx.Response:
        """The answer with its body read on the server's thread: a streamed body (a page of
        messages) reads the database as it goes, which the caller's event loop may not."""
        answer = super().handle_request(request)
        answer.read()
        return answer

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._thread.submit(self._answered, request).result()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(self._thread, self._answered, request)
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    def close(self) -> None:
        self._thread.submit(connections.close_all).result()
        self._thread.shutdown()

    async def aclose(self) -> None:
        self.close()
