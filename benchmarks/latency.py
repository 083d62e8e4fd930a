"""Single-caller latency: what one agent waits for per operation.

agentstate through the project's client against gunicorn (one gthread worker, keep-alive), its
service layer in process (the floor: no HTTP, no serialization), and Google ADK's
``SqliteSessionService`` and ``DatabaseSessionService`` in process, on the same shapes of data in
the same run: a session of 2,000 messages (events) for the reads, a user with 100 sessions for
the list page. Each operation is timed one call at a time; median and p99 per operation.

ADK has no rounds: its rows for the round save and the latest-round export stay empty.

Probes, in the same run: ``/livez``, ``/healthz`` and an unknown API URL (a JSON 404) on the
service's gunicorn, beside the bare Django view of the HTTP suite (benchmarks.baseline ``hello/``:
no middleware, no DRF) under a second gunicorn of the same settings.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentstate_site import bulk_data
from benchmarks import report
from benchmarks.http_load import gunicorn

APP = "bench_app"
USER = "agent"
HISTORY = 2_000
LISTED = 100
RECENT = 20
OPERATIONS = (
    "append",
    "recent-20",
    "full read 2,000",
    "session list page",
    "create",
    "round save",
    "latest round",
)
HEAVY = {"full read 2,000"}  # fewer samples: each costs tens of milliseconds
STATE = {"step": 1, "plan": "look up, summarise, answer", "memory": [1, 2, 3]}
MESSAGE = {"role": "user", "content": "A new message, about as long as a short chat turn in a conversation."}


def _samples(quick: bool) -> tuple[int, int]:
    """(samples per light operation, samples per heavy one)."""
    return (30, 5) if quick else (300, 40)


async def _atimed(fn: Callable[[], Awaitable[Any]], n: int) -> dict[str, float]:
    await fn()
    samples = []
    for _ in range(n):
        started = time.perf_counter_ns()
        await fn()
        samples.append(time.perf_counter_ns() - started)
    return report.summarize_ms(samples)


# --- agentstate ---------------------------------------------------------------------------------


def _prepare() -> tuple[Any, str]:
    """A tenant and agent key, a session of HISTORY messages (``full``), one to append to
    (``writes``), and LISTED sessions of one user in all."""
    from agentstate.tenancy.services import api_key_create, tenant_get_or_create
    from sessions_app.models import Session

    tenant = tenant_get_or_create(slug="bench-latency")
    _, key = api_key_create(tenant=tenant, name="latency benchmark")
    bulk_data.sessions_create(tenant=tenant, user_id=USER, count=LISTED - 2)
    for session_id in ("full", "writes"):
        Session.objects.create(tenant=tenant, user_id=USER, session_id=session_id, agent_id="agent")
    bulk_data.history_fill(session=Session.objects.get(tenant=tenant, session_id="full"), messages=HISTORY, rounds=10)
    bulk_data.analyze()
    return tenant, key


def _service_layer(tenant, n: tuple[int, int]) -> dict[str, Any]:
    from sessions_app import selectors, services

    def session(session_id: str):
        return selectors.session_get(tenant=tenant, user_id=USER, session_id=session_id)

    ops = {
        "append": lambda: services.message_append(session=session("writes"), messages=[dict(MESSAGE)]),
        "recent-20": lambda: selectors.message_recent(session=session("full"), limit=RECENT),
        "full read 2,000": lambda: list(selectors.message_list(session=session("full"))),
        "session list page": lambda: list(selectors.session_list(tenant=tenant).filter(user_id=USER)[:LISTED]),
        "create": lambda: services.session_create(tenant=tenant, user_id=USER),
        "round save": lambda: services.round_save(tenant=tenant, user_id=USER, session_id="writes", state=STATE),
        "latest round": lambda: selectors.round_get(tenant=tenant, user_id=USER, session_id="full"),
    }
    return {op: report.timed(fn, n[op in HEAVY]) for op, fn in ops.items()}


def _over_http(url: str, key: str, n: tuple[int, int]) -> dict[str, Any]:
    from agentstate.api.pagination import MAX_ROWS_PAGE_SIZE
    from agentstate.client import AgentStateClient

    with AgentStateClient(url, key) as client:
        ops = {
            "append": lambda: client.message_append(USER, "writes", MESSAGE),
            "recent-20": lambda: client.message_recent(USER, "full", RECENT),
            # The largest page the history serves: one request when the 2,000 fit in its byte budget.
            "full read 2,000": lambda: list(client.message_iter(USER, "full", page_size=MAX_ROWS_PAGE_SIZE)),
            "session list page": lambda: client.session_list(user_id=USER, page_size=LISTED),
            "create": lambda: client.session_create(USER),
            "round save": lambda: client.round_save(USER, "writes", state=STATE),
            "latest round": lambda: client.round_latest(USER, "full"),
        }
        assert len(ops["full read 2,000"]()) == HISTORY
        return {op: report.timed(fn, n[op in HEAVY]) for op, fn in ops.items()}


def _probes(service_url: str, bare_url: str, n: int) -> dict[str, Any]:
    """One GET at a time over a kept-alive connection: what a request costs with nothing to do."""
    import httpx

    with httpx.Client() as http:

        def get(url: str, status: int = 200) -> Callable[[], None]:
            def call() -> None:
                assert http.get(url).status_code == status, url

            return call

        return {
            "bare Django view (no middleware, no DRF)": report.timed(get(bare_url + "/hello/"), n),
            "/livez": report.timed(get(service_url + "/livez"), n),
            "/healthz (database and cache)": report.timed(get(service_url + "/healthz"), n),
            "unknown API URL (JSON 404)": report.timed(get(service_url + "/api/v1/nothing-here/", 404), n),
        }


# --- ADK ----------------------------------------------------------------------------------------


def _event(i: int):
    from google.adk.events.event import Event
    from google.genai import types

    role = "user" if i % 2 else "model"
    text = f"Message {i} of a long conversation, about as long as a short chat turn."
    return Event(
        author="user" if i % 2 else "agent",
        invocation_id=f"inv-{i // 2}",
        content=types.Content(role=role, parts=[types.Part(text=text)]),
    )


async def _adk(service, n: tuple[int, int]) -> dict[str, Any]:
    from google.adk.sessions.base_session_service import GetSessionConfig

    full = await service.create_session(app_name=APP, user_id=USER, session_id="full")
    for i in range(HISTORY):
        await service.append_event(full, _event(i))
    for i in range(LISTED - 2):
        await service.create_session(app_name=APP, user_id=USER, session_id=f"s{i}")
    writes = await service.create_session(app_name=APP, user_id=USER, session_id="writes")
    counter = iter(range(10**9))

    async def get(config=None):
        return await service.get_session(app_name=APP, user_id=USER, session_id="full", config=config)

    async def full_read():
        session = await get()
        assert len(session.events) == HISTORY
        return session

    ops = {
        "append": lambda: service.append_event(writes, _event(next(counter))),
        "recent-20": lambda: get(GetSessionConfig(num_recent_events=RECENT)),
        "full read 2,000": full_read,
        "session list page": lambda: service.list_sessions(app_name=APP, user_id=USER),
        "create": lambda: service.create_session(app_name=APP, user_id=USER, session_id=uuid.uuid4().hex),
    }
    return {op: await _atimed(fn, n[op in HEAVY]) for op, fn in ops.items()}


def _adk_database_url(tmp: str) -> str:
    """ADK's DatabaseSessionService on the run's own database server when it is PostgreSQL (its
    tables beside agentstate's, no names shared), else on a SQLite file."""
    url = os.environ["DATABASE_URL"]
    if url.startswith("postgres"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return f"sqlite+aiosqlite:///{tmp}/adk-db.sqlite3"


# --- The run ------------------------------------------------------------------------------------


def run(*, quick: bool = False) -> dict[str, Any]:
    from django.db import connection, connections
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    n = _samples(quick)
    tenant, key = _prepare()
    vendor = connection.vendor
    results: dict[str, Any] = {"history": HISTORY, "listed": LISTED, "samples": {"light": n[0], "heavy": n[1]}}
    services: dict[str, Any] = {}
    services["agentstate service layer (in process)"] = _service_layer(tenant, n)
    connections.close_all()  # gunicorn's worker opens its own
    with tempfile.TemporaryDirectory(prefix="latency-bench-") as tmp:
        log = report.RESULTS_DIR / "latency-server.log"
        report.RESULTS_DIR.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "AGENTSTATE_API_RATE"}
        env.update(DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost", GUNICORN_LOG_LEVEL="warning", GUNICORN_MAX_REQUESTS="0")
        with (
            gunicorn(env=env, settings={"GUNICORN_WORKERS": "1"}, log=log) as (url, _, _),
            gunicorn(
                env={**env, "DJANGO_SETTINGS_MODULE": "benchmarks.baseline_settings"},
                settings={"GUNICORN_WORKERS": "1"},
                log=log,
            ) as (bare_url, _, _),
        ):
            services[f"agentstate over HTTP (gunicorn, {vendor})"] = _over_http(url, key, n)
            results["probes"] = _probes(url, bare_url, n[0])
        database_url = _adk_database_url(tmp)
        services[f"ADK DatabaseSessionService ({database_url.split(':', 1)[0]}, in process)"] = asyncio.run(
            _adk(DatabaseSessionService(db_url=database_url), n)
        )
        services["ADK SqliteSessionService (SQLite file, in process)"] = asyncio.run(
            _adk(SqliteSessionService(db_path=str(Path(tmp) / "adk-sqlite.sqlite3")), n)
        )
    results["services"] = services
    return results


def print_table(result: dict[str, Any]) -> None:
    names = list(result["services"])
    headers = ["operation (median / p99 ms)", *names]
    rows = []
    for op in OPERATIONS:
        row = [op]
        for name in names:
            point = result["services"][name].get(op)
            row.append(f"{point['median_ms']:.2f} / {point['p99_ms']:.2f}" if point else "-")
        rows.append(row)
    print(report.table(headers, rows))
    print(
        report.table(
            ["request over HTTP (one worker)", "median ms", "p99 ms"],
            [[name, f"{p['median_ms']:.2f}", f"{p['p99_ms']:.2f}"] for name, p in result["probes"].items()],
        )
    )
