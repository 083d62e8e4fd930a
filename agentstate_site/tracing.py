"""OpenTelemetry for the service: each request, SQL statement (psycopg) and Redis command a span,
sent by OTLP/HTTP. Off unless ``settings.TRACING`` (an OTLP endpoint set, docs/OPERATIONS.md); then
``SiteConfig.ready`` calls ``tracing_start`` once per process, as Django sets up: in each gunicorn
worker (the master never loads the app), runserver, a management command. Off, this module is never
imported and nothing is patched.

No person's data leaves in a span: a request's URL, path and query become its route pattern
(``/api/v1/users/{user_id}/sessions/``, as the request log writes it), the caller's address, user
agent and any captured header are dropped, the person a request's path or query names is the access
log's keyed hash of them (``agentstate.subject``), and an error is its type alone (a database
error's message quotes the values that caused it). SQL spans carry the statement with its
placeholders, never the values, and Redis spans the command name only (both instrumentations'
defaults).
"""

from __future__ import annotations

import os
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from agentstate.logging import route_template
from agentstate.middleware import request_tenant_slug
from userdata_app.access_log.recorder import hash_of

try:
    from opentelemetry import context, trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import Status
except ImportError as exc:
    raise ImproperlyConfigured(
        "An OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT), which turns tracing on, but OpenTelemetry is "
        "not installed: pip install 'agentstate-django[otel]', or unset the endpoint."
    ) from exc

SERVICE_NAME = "agentstate"

# Attributes the HTTP instrumentation fills from the request line and headers (old and stable
# semantic conventions): each may quote a user id, a session id or a query's values.
_ROUTE_ATTRIBUTES = frozenset({"http.target", "url.path"})
_URL_ATTRIBUTES = frozenset({"http.url", "url.full"})
_DROPPED_ATTRIBUTES = frozenset(
    {
        "url.query",
        "http.user_agent",
        "user_agent.original",
        "net.peer.ip",
        "client.address",
        "http.client_ip",
        "net.sock.peer.addr",
        "network.peer.address",
    }
)
# Headers an operator may ask OpenTelemetry to capture (OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_*):
# the API key, a Location naming a user, ... none is sent.
_HEADER_PREFIXES = ("http.request.header.", "http.response.header.")
_EXCEPTION_KEPT = ("exception.type", "exception.escaped")


def tracing_start(*, processor: SpanProcessor | None = None) -> TracerProvider:
    """Instrument Django, psycopg and Redis in this process; their spans go through ``processor``
    (default: batched to the OTLP endpoint OpenTelemetry's own ``OTEL_EXPORTER_OTLP_*`` name, and
    the provider made the process's own), each scrubbed first."""
    name = os.environ.get("OTEL_SERVICE_NAME") or SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(Scrubbing(processor or BatchSpanProcessor(OTLPSpanExporter())))
    if processor is None:
        trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument(tracer_provider=provider, response_hook=_request_span_subject)
    # skip_dep_check: the backend's psycopg comes as psycopg[binary], a distribution the check misses.
    PsycopgInstrumentor().instrument(tracer_provider=provider, skip_dep_check=True)
    RedisInstrumentor().instrument(tracer_provider=provider)
    return provider


def tracing_stop() -> None:
    """Undo ``tracing_start`` (tests turn tracing on and off within one process)."""
    for instrumentor in (DjangoInstrumentor(), PsycopgInstrumentor(), RedisInstrumentor()):
        instrumentor.uninstrument()


class Scrubbing(SpanProcessor):
    """Hands ``inner`` each ended span without what could name a person (module docstring)."""

    def __init__(self, inner: SpanProcessor) -> None:
        self._inner = inner

    def on_start(self, span: Span, parent_context: context.Context | None = None) -> None:
        self._inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        self._inner.on_end(scrubbed(span))

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


def scrubbed(span: ReadableSpan) -> ReadableSpan:
    attributes = dict(span.attributes or {})
    route = attributes.get("http.route")
    route = route_template(route) if isinstance(route, str) and route else "-"
    for key in list(attributes):
        if key in _ROUTE_ATTRIBUTES:
            attributes[key] = route
        elif key in _URL_ATTRIBUTES:
            scheme = attributes.get("http.scheme") or attributes.get("url.scheme") or "http"
            host = attributes.get("http.host") or attributes.get("server.address") or attributes.get("http.server_name")
            attributes[key] = f"{scheme}://{host or ''}{route}"
        elif key in _DROPPED_ATTRIBUTES or key.startswith(_HEADER_PREFIXES):
            del attributes[key]
    events = [_exception_typed(event) if event.name == "exception" else event for event in span.events]
    method = attributes.get("http.method") or attributes.get("http.request.method")
    return ReadableSpan(
        name=f"{method} {route}" if method and route != "-" else span.name,  # not the raw regex
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=Status(span.status.status_code),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _exception_typed(event: Event) -> Event:
    """An exception event with its type, without its message or stack (a message quotes values)."""
    attributes = event.attributes or {}
    return Event(event.name, {key: attributes[key] for key in _EXCEPTION_KEPT if key in attributes}, event.timestamp)


def _request_span_subject(span: Any, request: Any, response: Any) -> None:
    """The tenant, and the person the path or query names as the access log's hash of them."""
    tenant = request_tenant_slug(request)
    if not tenant or not span.is_recording():
        return
    span.set_attribute("agentstate.tenant", tenant)
    match = getattr(request, "resolver_match", None)
    user_id = (match.kwargs.get("user_id") if match else None) or request.GET.get("user_id")
    if not isinstance(user_id, str) or not user_id:
        return
    try:
        span.set_attribute("agentstate.subject", hash_of(tenant_slug=tenant, user_id=user_id))
    except ImproperlyConfigured:  # no erasure HMAC key to hash with: the person goes unnamed
        pass
