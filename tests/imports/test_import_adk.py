"""import_sessions from ADK's own stores: after the import, ADK's code reading through agentstate
sees the sessions it saw through its old store; re-runs, interrupted runs, erased people, dry runs."""

from __future__ import annotations

import asyncio
import html
import re
import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime
from io import StringIO

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types
from sqlalchemy.pool import NullPool

from agentstate.integrations.adk import AgentStateSessionService
from backends.adk.process.models import AdkEvent
from sessions_app.models import Session
from tests.admin.staff import login, staff
from tests.client.keys import api_key_new
from userdata_app.erasure.registry import subject_hash
from userdata_app.models import ErasedSubject

pytestmark = pytest.mark.django_db(transaction=True)

SESSIONS = [("weather", "ana", "trip"), ("weather", "ana", "home"), ("weather", "bo", "trip"), ("notes", "bo", "n/1")]


def _event(author: str, text: str, delta: dict) -> Event:
    return Event(
        invocation_id=f"inv-{text}",
        author=author,
        content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta),
        timestamp=time.time(),
    )


async def _fill(service) -> None:
    """Sessions made with ADK's own service: initial state of every kind, events with deltas."""
    for n, (app, user, sid) in enumerate(SESSIONS):
        session = await service.create_session(
            app_name=app, user_id=user, session_id=sid, state={"topic": sid, "app:model": "m1", "user:lang": "pt"}
        )
        for turn in range(3):
            await service.append_event(session, _event("user", f"{sid} question {turn}", {"turns": turn}))
            await service.append_event(
                session, _event("agent", f"{sid} answer {turn}", {"user:last": f"{sid}-{turn}", "app:calls": n + turn})
            )


def _sqlite_store(tmp_path) -> tuple[str, str, SqliteSessionService]:
    path = str(tmp_path / "adk.db")
    return "adk-sqlite", path, SqliteSessionService(db_path=path)


def _database_store(tmp_path) -> tuple[str, str, DatabaseSessionService]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'adk-database.db'}"
    return "adk-database", url, DatabaseSessionService(db_url=url, poolclass=NullPool)  # one loop per asyncio.run


@pytest.fixture
def peer_postgres_url(settings):
    """A PostgreSQL database of the test's own beside agentstate's, for the peer's store (when the
    tests run on PostgreSQL)."""
    db = settings.DATABASES["default"]
    if connection.vendor != "postgresql":
        pytest.skip("the peer's PostgreSQL store needs the tests on PostgreSQL")
    name = f"{db['NAME']}_peer"
    server = psycopg.connect(
        host=db["HOST"], port=db["PORT"], user=db["USER"], password=db["PASSWORD"], dbname="postgres", autocommit=True
    )
    server.execute(f'DROP DATABASE IF EXISTS "{name}"')
    server.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql+asyncpg://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{name}"
    server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    server.close()


def _postgres_store(tmp_path, url):
    return "adk-database", url, DatabaseSessionService(db_url=url, poolclass=NullPool)  # one loop per asyncio.run


STORES = [_sqlite_store, _database_store, _postgres_store]


async def _seen(service) -> dict:
    """Every session as ADK's own code reads it: state, events, last update time."""
    seen = {}
    for app, user, sid in SESSIONS:
        session = await service.get_session(app_name=app, user_id=user, session_id=sid)
        seen[(app, user, sid)] = (session.state, [e.model_dump() for e in session.events], session.last_update_time)
    return seen


def _import(tenant, kind, location, *args) -> str:
    out = StringIO()
    call_command("import_sessions", "--tenant", tenant.slug, "--from", kind, location, *args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.mark.parametrize("store", STORES)
def test_adk_sees_through_agentstate_what_it_saw_in_its_old_store(live_server, tenant, tmp_path, store, request):
    extra = [request.getfixturevalue("peer_postgres_url")] if store is _postgres_store else []
    kind, location, service = store(tmp_path, *extra)
    asyncio.run(_fill(service))
    before = asyncio.run(_seen(service))

    out = _import(tenant, kind, location, "--quiet")

    assert "imported 4 new sessions, 0 extended, 24 items" in out
    agentstate = AgentStateSessionService(live_server.url, api_key_new(tenant))
    assert asyncio.run(_seen(agentstate)) == before
    listed = asyncio.run(agentstate.list_sessions(app_name="weather", user_id="ana"))
    assert sorted(s.id for s in listed.sessions) == ["home", "trip"]
    assert asyncio.run(agentstate.get_user_state(app_name="weather", user_id="bo")) == {"lang": "pt", "last": "trip-2"}
    # Each session's creation time is the one ADK's store kept, read on every kind of store.
    imported = Session.objects.filter(tenant=tenant).order_by("id")
    assert all(s.metadata["imported"]["created_in_store"] and s.created_at < s.updated_at for s in imported)


def test_a_rerun_imports_nothing_and_extends_a_session_that_grew(live_server, tenant, tmp_path):
    kind, location, service = _sqlite_store(tmp_path)
    asyncio.run(_fill(service))
    _import(tenant, kind, location)

    assert "imported 0 new sessions, 0 extended, 0 items" in _import(tenant, kind, location)
    assert AdkEvent.objects.count() == 24

    async def grow():
        session = await service.get_session(app_name="weather", user_id="bo", session_id="trip")
        await service.append_event(session, _event("user", "one more", {"turns": 9, "user:last": "more"}))

    asyncio.run(grow())
    assert "imported 0 new sessions, 1 extended, 1 items" in _import(tenant, kind, location)
    agentstate = AgentStateSessionService(live_server.url, api_key_new(tenant))
    assert asyncio.run(_seen(agentstate)) == asyncio.run(_seen(service))


def test_a_run_stopped_or_failing_part_way_resumes(tenant, tmp_path):
    kind, location, service = _sqlite_store(tmp_path)
    asyncio.run(_fill(service))
    with sqlite3.connect(location) as db:  # a real bad row: an event ADK cannot read back
        db.execute(
            "UPDATE events SET event_data = '{not json' WHERE id = "
            "(SELECT id FROM events WHERE user_id = 'bo' AND session_id = 'trip' ORDER BY timestamp DESC LIMIT 1)"
        )
    db.close()

    out = _import(tenant, kind, location, "--limit", "2")
    assert "2 of 4 sessions looked at; imported 2 new sessions" in out and "run the command again" in out
    with pytest.raises(CommandError, match="1 session"):
        _import(tenant, kind, location)
    assert Session.objects.filter(framework="adk").count() == 3  # the bad one rolled back whole

    with sqlite3.connect(location) as db:
        db.execute("DELETE FROM events WHERE event_data = '{not json'")
    db.close()
    assert "imported 1 new sessions, 0 extended, 5 items" in _import(tenant, kind, location)
    assert Session.objects.filter(framework="adk").count() == 4


def test_an_erased_person_is_refused_and_named(tenant, tmp_path):
    kind, location, service = _database_store(tmp_path)
    asyncio.run(_fill(service))
    key_id, digest = subject_hash(tenant_slug=tenant.slug, user_id="bo")
    erased_at = timezone.now() - timezone.timedelta(days=400)  # long past the grace period, still refused
    ErasedSubject.objects.create(
        subject_hash=digest, key_id=key_id, scope="user_data", erased_at=erased_at, grace_until=erased_at
    )

    out = _import(tenant, kind, location)

    assert "Refused user 'bo': erased on request" in out
    assert "imported 2 new sessions" in out and "1 users refused" in out
    assert set(Session.objects.values_list("user_id", flat=True)) == {"ana"}


def test_a_dry_run_reports_and_writes_nothing(tenant, tmp_path):
    kind, location, service = _sqlite_store(tmp_path)
    asyncio.run(_fill(service))

    assert "would import 4 new sessions, 0 extended, 24 items" in _import(tenant, kind, location, "--dry-run")
    assert not Session.objects.exists()


class _Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_bar_on_a_terminal_only_and_never_with_quiet(tenant, tmp_path, monkeypatch):
    kind, location, service = _sqlite_store(tmp_path)
    asyncio.run(_fill(service))
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    _import(tenant, kind, location, "--dry-run")
    assert "\r[" + "#" * 30 + "] 4/4 sessions, 24 items" in terminal.getvalue()

    terminal.seek(0)
    terminal.truncate()
    _import(tenant, kind, location, "--dry-run", "--quiet")
    assert terminal.getvalue() == ""


def _backdate(kind: str, location: str, app: str, user: str, sid: str, created: datetime) -> None:
    """Set a session's creation time in ADK's own store, as if ADK had created it then."""
    path = location.removeprefix("sqlite+aiosqlite:///")
    value = created.timestamp() if kind == "adk-sqlite" else created.strftime("%Y-%m-%d %H:%M:%S.%f")
    with closing(sqlite3.connect(path)) as store, store:
        store.execute(
            "UPDATE sessions SET create_time = ? WHERE app_name = ? AND user_id = ? AND id = ?", (value, app, user, sid)
        )


@pytest.mark.parametrize("store", [_sqlite_store, _database_store])
def test_an_imported_session_shows_adks_creation_time_and_the_import_time_as_such(client, tenant, tmp_path, store):
    """Issue 41, finding 15: staff read "Created at" as the time ADK created the session, not the
    time of the import, which the page shows as "Imported at"."""
    kind, location, service = store(tmp_path)
    asyncio.run(_fill(service))
    created = datetime(2024, 5, 1, 9, 30, 15, tzinfo=UTC)
    _backdate(kind, location, "weather", "ana", "trip", created)
    before = timezone.now()

    _import(tenant, kind, location, "--quiet")

    session = Session.objects.get(tenant=tenant, app_name="weather", user_id="ana", session_id="trip")
    assert session.created_at == created
    login(client, staff("viewer", perms=["sessions_app.view_session", "sessions_app.view_adkevent"]))
    page = client.get(reverse("admin:sessions_app_session_change", args=[session.pk])).content.decode()
    read = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    assert "Created at: 2024-05-01 09:30:15" in read
    imported_at = re.search(r"Imported at: (\S+ \S+), by import_sessions from " + kind, read)
    assert imported_at and imported_at[1] >= before.strftime("%Y-%m-%d %H:%M:%S")
    assert "Created at is the framework's own creation time, read from its store." in read


def test_a_creation_time_no_datetime_can_hold_imports_the_session_with_the_import_time(tenant, tmp_path):
    """A store's file may hold any number: NaN or a year past 9999 is an unknown creation time, not a
    traceback that stops the import."""
    kind, location, service = _sqlite_store(tmp_path)
    asyncio.run(_fill(service))
    path = location.removeprefix("sqlite+aiosqlite:///")
    with closing(sqlite3.connect(path)) as store, store:
        store.execute("UPDATE sessions SET create_time = 1e300 WHERE id = 'trip'")
    before = timezone.now()

    _import(tenant, kind, location, "--quiet")

    session = Session.objects.get(tenant=tenant, app_name="weather", user_id="ana", session_id="trip")
    assert session.created_at >= before
