"""One setting turns tracing on (``settings.TRACING``, agentstate_site.tracing): a fresh process of
the service with an OTLP endpoint sends its spans there; without one it imports no OpenTelemetry."""

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.fresh_process import ENV_PREFIXES, settings_process

ROOT = Path(__file__).resolve().parents[2]
USER = "alice-Zq81"
SERVICE = f"""
import json, sys
import django
django.setup()
from django.test import Client
client = Client()
client.get("/livez")
client.get("/api/v1/users/{USER}/sessions/s1/")  # no key: 401, no database needed
from opentelemetry import trace
getattr(trace.get_tracer_provider(), "force_flush", lambda: None)()  # on: send what is batched
print(json.dumps(sorted(m for m in sys.modules if m.startswith("opentelemetry.instrumentation."))))
"""


def test_an_otlp_endpoint_turns_tracing_on_and_opentelemetrys_own_switch_off():
    def tracing(**env: str) -> str:
        return settings_process("'on': s.TRACING", **env).stdout.strip()

    assert tracing() == '{"on": false}'
    assert tracing(OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318") == '{"on": true}'
    assert tracing(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://collector:4318/v1/traces") == '{"on": true}'
    assert tracing(OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318", OTEL_SDK_DISABLED="true") == '{"on": false}'


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: keeps each span it is sent."""

    spans: list = []

    def do_POST(self) -> None:
        request = ExportTraceServiceRequest.FromString(self.rfile.read(int(self.headers["Content-Length"])))
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
            for scope in resource.scope_spans:
                self.spans.extend((service, span) for span in scope.spans)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args) -> None:
        pass


def service_process(**env: str) -> list[str]:
    """The service set up in a fresh process from exactly ``env`` (among the settings' variables),
    two requests answered; the OpenTelemetry instrumentations it imported."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith(ENV_PREFIXES)}
    environment = {**clean, "DJANGO_SETTINGS_MODULE": "agentstate_site.settings", **env}
    run = subprocess.run(
        [sys.executable, "-c", SERVICE], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return eval(run.stdout.strip().splitlines()[-1])  # noqa: S307 (the child's json.dumps of a list of names)


@pytest.mark.servers  # two fresh processes of the service and a receiver
def test_the_service_sends_its_spans_to_the_endpoint_and_off_it_loads_no_instrumentation():
    Collector.spans = []
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
        assert service_process() == []  # off: nothing imported, nothing patched
        assert "opentelemetry.instrumentation.django" in service_process(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)
    finally:
        receiver.shutdown()
    names = {span.name for _, span in Collector.spans}
    assert {"GET /livez/", "GET /api/v1/users/{user_id}/sessions/{session_id}/"} <= names, names
    assert {service for service, _ in Collector.spans} == {"agentstate"}
    sent = [str(attribute.value) for _, span in Collector.spans for attribute in span.attributes]
    assert sent and not [value for value in sent if USER in value]
