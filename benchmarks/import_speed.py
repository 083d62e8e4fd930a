"""python -m benchmarks.import_speed [--sessions N] [--events N] [--keep-db]

How fast ``import_sessions`` brings ADK history in: an ``SqliteSessionService`` store built with
bulk SQL in ADK's own schema (sessions created through ADK, events inserted as the rows ADK writes:
each a user or model text turn, every tenth with a state delta), imported into a fresh agentstate
database (SQLite in a temporary directory, or ``<name>_bench`` on ``DATABASE_URL``'s PostgreSQL).
Prints events per second of the whole run (reads of the old store included).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from io import StringIO
from pathlib import Path

from benchmarks.bench_db import bench_database


def build_store(path: Path, *, sessions: int, events: int) -> None:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.genai import types

    async def create() -> None:
        service = SqliteSessionService(db_path=str(path))
        for n in range(sessions):
            await service.create_session(app_name="bench", user_id=f"user-{n % 50}", session_id=f"s-{n}")

    asyncio.run(create())
    start = time.time() - sessions * events
    with sqlite3.connect(path) as db:
        for n in range(sessions):  # a session's rows at a time: a million events never sit in memory
            rows = []
            for k in range(events):
                author = "user" if k % 2 == 0 else "agent"
                event = Event(
                    id=f"e-{n}-{k}",
                    invocation_id=f"inv-{n}-{k // 2}",
                    author=author,
                    content=types.Content(
                        role="user" if author == "user" else "model",
                        parts=[types.Part(text=f"turn {k} of session {n}: " + "lorem ipsum " * 8)],
                    ),
                    actions=EventActions(state_delta={"turns": k} if k % 10 == 9 else {}),
                    timestamp=start + n * events + k,
                )
                rows.append(
                    (event.id, "bench", f"user-{n % 50}", f"s-{n}", event.invocation_id, event.timestamp,
                     event.model_dump_json(exclude_none=True))
                )  # fmt: skip
            db.executemany(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, event_data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[2])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--events", type=int, default=100, help="Events per session.")
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, bench_database(keep=args.keep_db) as url:
        store = Path(tmp) / "adk.db"
        build_store(store, sessions=args.sessions, events=args.events)
        from django.core.management import call_command
        from django.db import connection

        from agentstate.tenancy.services import tenant_get_or_create

        tenant_get_or_create(slug="bench")
        out = StringIO()
        started = time.perf_counter()
        call_command("import_sessions", "--tenant", "bench", "--from", "adk-sqlite", str(store), "--quiet", stdout=out)
        elapsed = time.perf_counter() - started
        total = args.sessions * args.events
        print(out.getvalue().strip())
        print(
            f"{connection.vendor}: {total} events in {args.sessions} sessions imported in {elapsed:.1f} s: "
            f"{total / elapsed:,.0f} events/s ({url.split('@')[-1]})"
        )


if __name__ == "__main__":
    main()
