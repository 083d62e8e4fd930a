"""Google ADK: one turn as ADK's Runner does it, through AgentStateSessionService against gunicorn,
beside ADK's own DatabaseSessionService and SqliteSessionService in process on a SQLite file.

A turn with one tool call is ``get_session`` without config, then four ``append_event`` (user
message, function call, function response with a state delta, answer). Sessions hold 100 and
2,000 events before the measured turns; every service gets the same events in the same run.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.http_load import gunicorn

SIZES = (100, 2000)
APP = "bench_app"


def _events(turn: int) -> list[Any]:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    def content(role: str, part: types.Part) -> types.Content:
        return types.Content(role=role, parts=[part])

    call = types.FunctionCall(id=f"call-{turn}", name="get_weather", args={"city": "Paris"})
    result = types.FunctionResponse(id=f"call-{turn}", name="get_weather", response={"forecast": "sunny", "c": 21})
    return [
        Event(
            author="user",
            invocation_id=f"inv-{turn}",
            content=content("user", types.Part(text=f"Weather in Paris? ({turn})")),
        ),
        Event(author="agent", invocation_id=f"inv-{turn}", content=content("model", types.Part(function_call=call))),
        Event(
            author="agent",
            invocation_id=f"inv-{turn}",
            content=content("user", types.Part(function_response=result)),
            actions=EventActions(state_delta={"lookups": turn, "user:last_city": "Paris"}),
        ),
        Event(author="agent", invocation_id=f"inv-{turn}", content=content("model", types.Part(text="Sunny, 21 °C."))),
    ]


async def _measure(service, *, size: int, turns: int) -> dict[str, float]:
    """Fill a session to ``size`` events (timing each append), then time ``turns`` turns."""
    session = await service.create_session(app_name=APP, user_id="bench-user", session_id=f"s{size}")
    appends: list[float] = []
    for turn in range(size // 4):
        for event in _events(turn):
            started = time.perf_counter()
            await service.append_event(session, event)
            appends.append(time.perf_counter() - started)
    loads, turn_times = [], []
    for turn in range(turns):
        started = time.perf_counter()
        session = await service.get_session(app_name=APP, user_id="bench-user", session_id=f"s{size}")
        loads.append(time.perf_counter() - started)
        for event in _events(size + turn):
            await service.append_event(session, event)
        turn_times.append(time.perf_counter() - started)  # each turn adds 4 events to the next load
    return {
        "append_ms": statistics.median(appends) * 1000,
        "load_ms": statistics.median(loads) * 1000,
        "turn_ms": statistics.median(turn_times) * 1000,
    }


async def _run_service(service, *, turns: int) -> dict[str, Any]:
    return {str(size): await _measure(service, size=size, turns=turns) for size in SIZES}


def _api_key() -> str:
    from agentstate.tenancy.models import APIKey
    from agentstate.tenancy.services import tenant_get_or_create

    _, key = APIKey.objects.create_key(name="bench-adk", tenant=tenant_get_or_create(slug="bench-adk"), scope="agent")
    return key


def run(*, turns: int = 10) -> dict[str, Any]:
    import os

    from django.db import connections
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    from agentstate.integrations.adk import AgentStateSessionService

    key = _api_key()
    connections.close_all()  # gunicorn's workers open their own
    results: dict[str, Any] = {"turns_per_point": turns, "sizes": list(SIZES)}
    with tempfile.TemporaryDirectory(prefix="adk-bench-") as tmp:
        log = Path(tmp) / "gunicorn.log"
        with gunicorn(app="agentstate.wsgi:application", env=dict(os.environ), workers=1, threads=1, log=log) as (
            url,
            _,
        ):
            results["agentstate (HTTP, gunicorn, SQLite)"] = asyncio.run(
                _run_service(AgentStateSessionService(url, key), turns=turns)
            )
        results["ADK DatabaseSessionService (SQLite file)"] = asyncio.run(
            _run_service(DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{tmp}/adk-db.sqlite3"), turns=turns)
        )
        results["ADK SqliteSessionService (SQLite file)"] = asyncio.run(
            _run_service(SqliteSessionService(db_path=f"{tmp}/adk-sqlite.sqlite3"), turns=turns)
        )
    return results


def print_table(result: dict[str, Any]) -> None:
    sizes = result["sizes"]
    head = ["service", "append ms"] + [f"load {s:,} ms" for s in sizes] + [f"turn @{s:,} ms" for s in sizes]
    print(" | ".join(head))
    for name, points in result.items():
        if not isinstance(points, dict):
            continue
        row = [name, f"{points[str(sizes[0])]['append_ms']:.1f}"]
        row += [f"{points[str(s)]['load_ms']:.1f}" for s in sizes]
        row += [f"{points[str(s)]['turn_ms']:.1f}" for s in sizes]
        print(" | ".join(row))
