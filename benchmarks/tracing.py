"""What OpenTelemetry costs a request (agentstate_site.tracing, agentstate.client.tracing).

    DATABASE_URL=postgres://.../scratch python benchmarks/tracing.py [--before TREE] [--rounds N]

The server: four API calls (append a message, read a session, read 20 messages, replace working
state) sent straight to Django's WSGI handler in this process (no socket), with tracing off and on,
rep by rep, timed in this process's CPU time (the export thread's included; the database's not),
which a machine shared with other work disturbs less than the clock. On is what an OTLP endpoint
turns on: the batch processor and the OTLP exporter's own encoding, sent nowhere.
``--before TREE``: a checkout of the code before tracing existed (``git archive COMMIT | tar -x``);
each round then runs a process of that tree and one of this, tracing off in both, alternately,
each on its own database (DATABASE_URL's name with ``_before`` / ``_now``, created if missing).

The client: one call through ``AgentStateClient`` on an in-memory transport, with the trace hook
and without it (as before), and with a span current (the hook then writes ``traceparent``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

CALLS = 200  # per operation and rep
OPERATIONS = ("append", "session", "messages-20", "working-state")
EXPORTED: list[int] = []  # spans per batch the "on" reps exported


def _environ(method: str, path: str, key: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    payload = json.dumps(body).encode() if body is not None else b""
    return {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "HTTP_HOST": "localhost",
        "HTTP_X_API_KEY": key,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(payload)),
        "wsgi.input": BytesIO(payload),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
    }


def _server_setup() -> tuple[str, str]:
    import django
    from django.core.management import call_command

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentstate_site.settings")
    django.setup()
    call_command("migrate", verbosity=0)
    from agentstate.tenancy.services import api_key_create, tenant_get_or_create
    from sessions_app import services

    tenant = tenant_get_or_create(slug="bench-tracing")
    key = api_key_create(tenant=tenant, name="tracing benchmark")[1]
    session_id = uuid.uuid4().hex
    session = services.session_create(tenant=tenant, user_id="agent", session_id=session_id)
    services.message_append(session=session, messages=[{"role": "user", "content": "hello"}] * 20)
    return key, f"/api/v1/users/agent/sessions/{session_id}/"


def _requests(key: str, base: str) -> dict[str, Callable[[], dict[str, Any]]]:
    message = {"messages": [{"role": "user", "content": "A new message, about as long as a short chat turn."}]}
    return {
        "append": lambda: _environ("POST", base + "messages/", key, message),
        "session": lambda: _environ("GET", base, key),
        "messages-20": lambda: _environ("GET", base + "messages/", key),
        "working-state": lambda: _environ("PUT", base + "working-state/", key, {"step": 1, "plan": "answer"}),
    }


def _rep(requests: dict[str, Callable[[], dict[str, Any]]]) -> dict[str, float]:
    """Microseconds per call of each operation, through a handler built now (its middleware as
    the process's instrumentation has it), on a fresh database connection."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connections

    connections.close_all()
    handler = WSGIHandler()
    out: dict[str, float] = {}
    for name, environ in requests.items():
        for _ in range(3):  # warm: the connection, caches
            _drain(handler(environ(), _start_response))
        started = time.process_time_ns()
        for _ in range(CALLS):
            _drain(handler(environ(), _start_response))
        out[name] = (time.process_time_ns() - started) / CALLS / 1000
    return out


def _start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None, /) -> Callable[[bytes], object]:
    if not status.startswith("2"):
        raise RuntimeError(f"benchmark request answered {status}")
    return len


def _drain(body: Any) -> None:
    for _ in body:
        pass
    if hasattr(body, "close"):
        body.close()


def _otlp_processor() -> Any:
    """The batch processor and OTLP exporter an endpoint turns on, encoding each batch as it would
    but sending nothing."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    class Unsent(OTLPSpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            encode_spans(spans).SerializeToString()
            EXPORTED.append(len(spans))
            return SpanExportResult.SUCCESS

    return BatchSpanProcessor(Unsent())


def server(rounds: int, modes: tuple[str, ...]) -> dict[str, list[dict[str, float]]]:
    requests = _requests(*_server_setup())
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for _ in range(rounds):
        for mode in modes:
            if mode == "on":
                from agentstate_site.tracing import tracing_start, tracing_stop

                processor = _otlp_processor()
                tracing_start(processor=processor)
                try:
                    results[mode].append(_rep(requests))
                finally:
                    tracing_stop()
                    processor.shutdown()
            else:
                results[mode].append(_rep(requests))
    return results


def client(rounds: int) -> dict[str, list[float]]:
    import httpx
    from opentelemetry.sdk.trace import TracerProvider

    from agentstate.client import AgentStateClient

    tracer = TracerProvider().get_tracer("benchmark")
    transport = httpx.MockTransport(lambda request: httpx.Response(204))
    results: dict[str, list[float]] = {"no hook (before)": [], "hook, no span": [], "hook, span current": []}
    calls = 5_000
    with AgentStateClient("http://agentstate", "key", transport=transport) as hooked:
        bare = AgentStateClient("http://agentstate", "key", transport=transport)
        bare._http.event_hooks = {"request": [], "response": []}
        for _ in range(rounds):
            for name, call_client, span in (
                ("no hook (before)", bare, False),
                ("hook, no span", hooked, False),
                ("hook, span current", hooked, True),
            ):
                started = time.process_time_ns()
                if span:
                    with tracer.start_as_current_span("step"):
                        for _ in range(calls):
                            call_client.session_delete("u1", "s1")
                else:
                    for _ in range(calls):
                        call_client.session_delete("u1", "s1")
                results[name].append((time.process_time_ns() - started) / calls / 1000)
        bare.close()
    return results


def _median(reps: list[dict[str, float]], operation: str) -> float:
    return statistics.median(rep[operation] for rep in reps)


def _database_url(suffix: str) -> str:
    """DATABASE_URL's server, a database of its own for this tree (created when missing)."""
    import psycopg

    url = os.environ["DATABASE_URL"]
    base, name = url.rsplit("/", 1)
    name = f"{name}_{suffix}"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            admin.execute(f'CREATE DATABASE "{name}"')
    return f"{base}/{name}"


def _one_process(tree: Path, suffix: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "DATABASE_URL": _database_url(suffix)}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    run = subprocess.run(
        [sys.executable, __file__, "--child"], cwd=tree, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=Path, help="a tree of the code before tracing: compare, tracing off")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one rep, tracing off, of whichever tree PYTHONPATH names
        print(json.dumps(server(1, ("off",))["off"][0]))
        return
    if args.before:
        here = Path(__file__).resolve().parents[1]
        compared: dict[str, list[dict[str, float]]] = {"before": [], "now (off)": []}
        for _ in range(args.rounds):
            compared["before"].append(_one_process(args.before.resolve(), "before"))
            compared["now (off)"].append(_one_process(here, "now"))
        print("server, CPU µs per call (median of rounds, one process each):")
        for operation in OPERATIONS:
            before, now = (_median(compared[m], operation) for m in compared)
            print(f"  {operation:14} before {before:8.0f}  now, off {now:8.0f}  ({(now / before - 1) * 100:+.1f}%)")
        return
    results = server(args.rounds, ("off", "on"))
    print("server, CPU µs per call (median of reps, off and on interleaved in one process):")
    for operation in OPERATIONS:
        off, on = (_median(results[m], operation) for m in ("off", "on"))
        print(f"  {operation:14} off {off:8.0f}  on {on:8.0f}  added {on - off:6.0f} ({(on / off - 1) * 100:+.1f}%)")
    requests = args.rounds * len(OPERATIONS) * (CALLS + 3)
    print(f"  spans per request, on: {sum(EXPORTED) / requests:.1f}")
    print("client, CPU µs per call on an in-memory transport (median of reps):")
    for name, reps in client(args.rounds).items():
        print(f"  {name:20} {statistics.median(reps):7.1f}")


if __name__ == "__main__":
    main()
