"""What each layer of the request path costs a small API call (issue 44): the CPU of one request
through Django's WSGI handler, in process, as configured and with one middleware, one DRF feature
or the request log taken away at a time, the variants taking turns request by request so the
machine's swings hit them alike; and the statements each request sends, as configured.

The requests are the small calls the frameworks make (the SDK's get_items(limit=20), add_items of
two items, pop_item; ADK's create_session, append_event with and without a ``user:`` state delta)
beside a bare ``GET /livez`` and an unknown API URL, on the benchmark's own database (SQLite, or
PostgreSQL with DATABASE_URL), the request log at INFO as shipped (written to /dev/null).
gunicorn's own share (parsing, the socket, its threads) is not here: ``python -m benchmarks
frameworks`` measures the whole call.

On PostgreSQL the database's own CPU per request is measured too (its backend process's, from
/proc, summed over the rounds: the kernel counts it in 10 ms ticks), with the hot statements
prepared as configured and not prepared, as under ``DATABASE_TRANSACTION_POOLING``.

Run: ``python -m benchmarks.request_path [--rounds N]``. A variant costs the request what its
column says less the configured one: negative means the layer it takes away cost that much.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks import report
from benchmarks.bench_db import bench_database

USER, SESSION, APP = "bench-user", "chat", "bench_app"
HISTORY = 2_000  # messages in the SDK's session, as in the frameworks suite's larger size

# Middleware taken away together: a layer and what needs it (the login's middleware need sessions).
WITHOUT = {
    "the login's middleware (sessions, authentication, messages, viewer)": (
        "agentstate.middleware.SessionMiddleware",
        "agentstate.middleware.AuthenticationMiddleware",
        "agentstate.middleware.MessageMiddleware",
        "agentstate.access.ViewerMiddleware",
    ),
    "CSRF": ("django.middleware.csrf.CsrfViewMiddleware",),
    "WhiteNoise": ("whitenoise.middleware.WhiteNoiseMiddleware",),
    "security, common, X-Frame-Options": (
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    ),
    "read-your-writes": ("agentstate.db_router.ReadYourWritesMiddleware",),
    "503 on unavailable": ("agentstate.middleware.UnavailableMiddleware",),
}


class Requests:
    """The requests, each a WSGI environ made anew (its body is read once)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.version, self.time = 0, 0.0

    def environ(self, method: str, path: str, body: Any = None, query: str = "") -> dict[str, Any]:
        data = b"" if body is None else json.dumps(body).encode()
        return {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_ACCEPT": "*/*",
            "HTTP_X_API_KEY": self.key,
            "CONTENT_TYPE": "application/json" if body is not None else "",
            "CONTENT_LENGTH": str(len(data)),
            "wsgi.input": io.BytesIO(data),
            "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http",
        }

    def all(self) -> dict[str, Callable[[], dict[str, Any]]]:
        messages = f"/api/v1/users/{USER}/sessions/{SESSION}/messages/"
        sessions = f"/api/v1/adk/apps/{APP}/users/{USER}/sessions/"
        events = f"{sessions}{SESSION}/events/"

        def item(role: str) -> dict[str, Any]:
            return {"client_id": f"oa-{uuid.uuid4()}", "role": role, "type": "message", "content": '"a short turn"'}

        def event(delta: dict[str, Any]) -> dict[str, Any]:
            data = {
                "id": str(uuid.uuid4()),
                "author": "agent",
                "invocation_id": "inv",
                "timestamp": time.time(),
                "content": {"role": "model", "parts": [{"text": "A short turn."}]},
                "actions": {"state_delta": delta},
            }
            return {"event": json.dumps(data), "expected_version": self.version, "last_update_time": self.time}

        return {
            "GET /livez": lambda: self.environ("GET", "/livez"),
            "unknown API URL (JSON 404)": lambda: self.environ("GET", "/api/v1/nothing-here/"),
            "SDK get_items(limit=20)": lambda: self.environ("GET", messages, query="recent=20"),
            "SDK add_items (2 items)": lambda: self.environ(
                "POST", messages, {"messages": [item("user"), item("assistant")]}
            ),
            "SDK pop_item": lambda: self.environ("POST", messages + "pop/", {"idempotency_key": str(uuid.uuid4())}),
            "ADK create_session": lambda: self.environ("POST", sessions, {"state": "{}"}),
            "ADK append_event": lambda: self.environ("POST", events, event({})),
            "ADK append_event (user: state delta)": lambda: self.environ(
                "POST", events, event({"lookups": 1, "user:last_city": "Paris"})
            ),
        }

    def answered(self, name: str, body: bytes) -> None:
        """An ADK append's answer names the version the next one must name."""
        if name.startswith("ADK append"):
            answer = json.loads(body)
            self.version, self.time = answer["version"], answer["last_update_time"]


def _data() -> Requests:
    from agentstate.tenancy.services import api_key_create, tenant_get_or_create
    from backends.adk.process.services import adk_session_create
    from sessions_app import services

    tenant = tenant_get_or_create(slug="bench-request-path")
    _, key = api_key_create(tenant=tenant, name="request path benchmark")
    session = services.session_create(tenant=tenant, user_id=USER, session_id=SESSION)
    for start in range(0, HISTORY, 500):
        batch = [{"role": "user", "content": f"message {n}"} for n in range(start, min(HISTORY, start + 500))]
        services.message_append(session=session, messages=batch)
    requests = Requests(key)
    adk = adk_session_create(tenant=tenant, app_name=APP, user_id=USER, session_id=SESSION, state={}).session
    requests.version, requests.time = adk.version, adk.last_update_time or 0.0
    return requests


def _handlers() -> dict[str, Any]:
    """A WSGI handler per middleware variant (Django reads MIDDLEWARE when it builds one)."""
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler

    configured = list(settings.MIDDLEWARE)
    handlers = {}
    for name, removed in {"as configured": (), "no middleware": tuple(configured), **WITHOUT}.items():
        settings.MIDDLEWARE = [m for m in configured if m not in removed]
        handlers[name] = WSGIHandler()
    settings.MIDDLEWARE = configured
    return handlers


@contextlib.contextmanager
def _drf(**attributes: Any) -> Iterator[None]:
    """APIView's defaults changed while a request runs (every view that sets none inherits them)."""
    from rest_framework.views import APIView

    saved = {name: getattr(APIView, name) for name in attributes}
    for name, value in attributes.items():
        setattr(APIView, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(APIView, name, value)


@contextlib.contextmanager
def _unprepared() -> Iterator[None]:
    """The statements agentstate.postgresql prepares sent client-bound, as behind PgBouncer."""
    from django.db import connection

    saved = connection.settings_dict.get("PREPARED_STATEMENTS", True)
    connection.settings_dict["PREPARED_STATEMENTS"] = False
    try:
        yield
    finally:
        connection.settings_dict["PREPARED_STATEMENTS"] = saved


def _backend_ticks() -> tuple[int, int] | None:
    """The PostgreSQL backend serving this process and the CPU ticks it has used (None elsewhere)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:  # a server on another machine
        return None
    return pid, int(fields[11]) + int(fields[12])  # utime, stime


@contextlib.contextmanager
def _log_level(level: int) -> Iterator[None]:
    log = logging.getLogger("agentstate.request")
    saved = log.level
    log.setLevel(level)
    try:
        yield
    finally:
        log.setLevel(saved)


def _variants() -> dict[str, tuple[str, Callable[[], contextlib.AbstractContextManager[Any]]]]:
    """Each variant: the handler it runs on, and what it changes around a request."""
    from agentstate.api.authentication import ApiKeyAuthentication
    from agentstate.api.renderers import JSONRenderer

    variants: dict[str, tuple[str, Callable[[], contextlib.AbstractContextManager[Any]]]] = {
        name: (name, contextlib.nullcontext) for name in ("as configured", "no middleware", *WITHOUT)
    }
    variants["request log off"] = ("as configured", lambda: _log_level(logging.WARNING))
    variants["DRF: JSON renderer only"] = ("as configured", lambda: _drf(renderer_classes=[JSONRenderer]))
    variants["DRF: API-key authentication only"] = (
        "as configured",
        lambda: _drf(authentication_classes=[ApiKeyAuthentication]),
    )
    variants["DRF: no throttle"] = ("as configured", lambda: _drf(throttle_classes=[]))
    variants["statements not prepared"] = ("as configured", _unprepared)
    return variants


def run(*, rounds: int, database_rounds: int = 400) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for handler in logging.getLogger("agentstate").handlers:  # the request log at INFO, as shipped, unprinted
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(open(os.devnull, "w"))  # noqa: SIM115 (for the whole run)
    logging.getLogger("agentstate").setLevel(logging.INFO)
    requests = _data()
    calls = requests.all()
    handlers = _handlers()
    variants = _variants()

    def call(name: str, variant: str) -> int:
        handler_name, around = variants[variant]
        environ = calls[name]()
        status: list[str] = []
        with around():
            started = time.process_time_ns()
            body = b"".join(handlers[handler_name](environ, lambda s, h, exc=None: status.append(s)))
            spent = time.process_time_ns() - started
        assert status[0][:1] in "24" and (status[0][:3] == "404") == name.startswith("unknown"), (name, status, body)
        requests.answered(name, body)
        return spent

    statements = {}
    for name in calls:
        call(name, "as configured")  # warms the key cache and the connection
        with CaptureQueriesContext(connection) as captured:
            call(name, "as configured")
        statements[name] = len(captured.captured_queries)
    samples: dict[tuple[str, str], list[int]] = {(name, v): [] for name in calls for v in variants}
    for _ in range(rounds):
        for name in calls:
            order = list(variants)
            random.shuffle(order)
            for variant in order:
                samples[(name, variant)].append(call(name, variant))
    cpu = {
        name: {variant: round(statistics.median(samples[(name, variant)]) / 1e6, 4) for variant in variants}
        for name in calls
    }
    return {
        "rounds": rounds,
        "database": connection.vendor,
        "statements": statements,
        "cpu_ms": cpu,
        "database_rounds": database_rounds,
        "database_cpu_ms": _database_cpu(call, list(calls), database_rounds),
    }


def _database_cpu(call: Callable[[str, str], int], names: list[str], rounds: int) -> dict[str, dict[str, float]]:
    """The PostgreSQL backend's CPU per request of each kind, prepared and not, taking turns; a
    request after which another backend serves (CONN_MAX_AGE ended the connection) is not counted."""
    if _backend_ticks() is None:
        return {}
    both = ("as configured", "statements not prepared")
    ticks = dict.fromkeys(((name, variant) for name in names for variant in both), 0)
    counted = dict.fromkeys(ticks, 0)
    for _ in range(rounds):
        for name in names:
            for variant in random.sample(both, 2):
                before = _backend_ticks()
                call(name, variant)
                after = _backend_ticks()
                if before and after and before[0] == after[0]:
                    ticks[(name, variant)] += after[1] - before[1]
                    counted[(name, variant)] += 1
    per_tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    return {
        name: {v: round(ticks[(name, v)] * per_tick_ms / max(counted[(name, v)], 1), 3) for v in both} for name in names
    }


def print_table(result: dict[str, Any]) -> None:
    cpu = result["cpu_ms"]
    names = list(cpu)
    variants = list(next(iter(cpu.values())))
    print(
        f"CPU per request in process ({result['database']}, median of {result['rounds']} rounds, ms): "
        "as configured, then each variant's difference; PostgreSQL's own, the mean of "
        f"{result.get('database_rounds')} rounds"
    )
    rows = [["statements", *[result["statements"][n] for n in names]]]
    rows.append(["as configured", *[f"{cpu[n]['as configured']:.3f}" for n in names]])
    rows += [
        [variant, *[f"{cpu[n][variant] - cpu[n]['as configured']:+.3f}" for n in names]]
        for variant in variants
        if variant != "as configured"
    ]
    database = result.get("database_cpu_ms") or {}
    rows += [
        [
            f"PostgreSQL's CPU, {label}",
            *[f"{database[n][variant]:.3f}" for n in names],
        ]
        for label, variant in (("prepared", "as configured"), ("not prepared", "statements not prepared"))
        if database
    ]
    print(report.table(["", *names], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=200, help="requests of each kind per variant")
    parser.add_argument(
        "--database-rounds", type=int, default=400, help="requests of each kind for PostgreSQL's CPU (10 ms ticks)"
    )
    args = parser.parse_args()
    with bench_database():
        result = run(rounds=args.rounds, database_rounds=args.database_rounds)
    print_table(result)


if __name__ == "__main__":
    main()
