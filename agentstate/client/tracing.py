"""The caller's trace context on each request (W3C ``traceparent``), when OpenTelemetry is installed
and a span is current: the service's span of the request (agentstate_site.tracing) is then a child
of the caller's. Without OpenTelemetry the hooks are empty and the client works as it always did.

A source registered with ``context_source_add`` may name the span to join instead of OpenTelemetry's
current one (agentstate.integrations.openai_agents_tracing: the Agents SDK's current step)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

try:
    from opentelemetry import propagate
    from opentelemetry.context import Context
except ImportError:  # the client needs no OpenTelemetry
    propagate = None  # type: ignore[assignment]

_sources: list[Callable[[], Any]] = []


def context_source_add(source: Callable[[], Context | None]) -> None:
    """``source()`` gives the context whose span a request joins, or None to defer to the next."""
    if source not in _sources:
        _sources.append(source)


def context_source_remove(source: Callable[[], Context | None]) -> None:
    if source in _sources:
        _sources.remove(source)


def _inject(request: httpx.Request) -> None:
    context = next((found for source in _sources if (found := source()) is not None), None)
    propagate.inject(request.headers, context=context)


async def _ainject(request: httpx.Request) -> None:
    _inject(request)


def request_hooks() -> dict[str, list[Callable[[httpx.Request], None]]]:
    """``event_hooks`` for an ``httpx.Client``: none without OpenTelemetry."""
    return {"request": [_inject]} if propagate is not None else {}


def async_request_hooks() -> dict[str, list[Callable[[httpx.Request], Any]]]:
    """``event_hooks`` for an ``httpx.AsyncClient``."""
    return {"request": [_ainject]} if propagate is not None else {}
