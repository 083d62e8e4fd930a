"""Google ADK's stores as an import source: ``DatabaseSessionService`` (any SQLAlchemy URL it
accepts) and ``SqliteSessionService`` files, read through ADK's own ``list_sessions`` and
``get_session``; written as ADK's requests to agentstate write (backends.adk.views), its
ids encoded as ``AgentStateSessionService`` encodes them."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from agentstate.tenancy.models import Tenant
from backends.adk.people import services as user_services
from backends.adk.process import services
from backends.adk.process.models import AdkEvent
from sessions_app.models import Session
from userdata_app.imports import Imported


class AdkSource:
    """One ADK store; ``kind`` is ``adk-database`` (a URL) or ``adk-sqlite`` (a file)."""

    unit = "sessions"  # what the summary counts

    def __init__(self, kind: str, location: str) -> None:
        self.kind, self.location = kind, location
        self._loop = asyncio.new_event_loop()
        if kind == "adk-database":
            from google.adk.sessions.database_session_service import DatabaseSessionService

            self.service: Any = DatabaseSessionService(db_url=location)
        else:
            from google.adk.sessions.sqlite_session_service import SqliteSessionService

            self.service = SqliteSessionService(db_path=location)

    def run(self, coroutine: Any) -> Any:
        return self._loop.run_until_complete(coroutine)

    def close(self) -> None:
        if self.kind == "adk-database":
            self.run(self.service.close())
        self._loop.close()

    def _app_names(self) -> list[str]:
        # Raw: no ORM form (ADK's own store, read in place: its tables have no Django models)
        query = "SELECT DISTINCT app_name FROM sessions ORDER BY app_name"
        if self.kind == "adk-sqlite":
            connection = sqlite3.connect(f"file:{self.location}?mode=ro", uri=True)
            try:
                return [row[0] for row in connection.execute(query)]
            finally:
                connection.close()
        from sqlalchemy import text

        async def names() -> list[str]:
            # Raw: idem, through SQLAlchemy's engine
            async with self.service.db_engine.connect() as connection:
                return [row[0] for row in await connection.execute(text(query))]

        return self.run(names())

    def _create_times(self) -> dict[tuple[str, str, str], datetime]:
        """Each session's creation time as the store keeps it (ADK's API does not return it): epoch
        seconds in ``SqliteSessionService``'s file, a UTC timestamp in ``DatabaseSessionService``'s."""
        # Raw: no ORM form (ADK's own store, read in place: its tables have no Django models)
        query = "SELECT app_name, user_id, id, create_time FROM sessions"
        if self.kind == "adk-sqlite":
            connection = sqlite3.connect(f"file:{self.location}?mode=ro", uri=True)
            try:
                rows = list(connection.execute(query))
            finally:
                connection.close()
        else:
            from sqlalchemy import DateTime, text

            async def read() -> list[Any]:
                # Raw: idem, through SQLAlchemy's engine
                async with self.service.db_engine.connect() as connection:
                    typed = text(query).columns(create_time=DateTime())
                    return list(await connection.execute(typed))

            rows = self.run(read())
        return {(app, user, sid): moment for app, user, sid, created in rows if (moment := _utc(created))}

    def sessions(self) -> Iterator[AdkPeerSession]:
        from sqlalchemy.exc import SQLAlchemyError

        from agentstate.integrations.adk import identifier_encode

        try:
            created = self._create_times()
        except (sqlite3.Error, SQLAlchemyError):  # a store without the column: imported, the time unknown
            created = {}
        for app_name in self._app_names():
            listed = self.run(self.service.list_sessions(app_name=app_name))
            for session in sorted(listed.sessions, key=lambda s: (s.user_id, s.id)):
                peer = AdkPeerSession(self, app_name, session.user_id, session.id, identifier_encode)
                peer.created_at = created.get((app_name, session.user_id, session.id))
                yield peer


def _utc(value: Any) -> datetime | None:
    """A store's creation time as an aware UTC datetime: ADK writes UTC, naive where the database
    keeps no zone. A number no datetime can hold (NaN, past the year 9999) is an unknown time: the
    session is imported, and its page says the time is the import's."""
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, ValueError, OSError):
            return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return None


class AdkPeerSession:
    def __init__(self, source: AdkSource, app_name: str, user_id: str, session_id: str, encode: Any) -> None:
        self.source, self.peer_ids = source, (app_name, user_id, session_id)
        self.ids = {"app_name": encode(app_name), "user_id": encode(user_id), "session_id": encode(session_id)}
        self.user_id = self.ids["user_id"]
        self.label = f"ADK session {session_id!r} (app {app_name!r}, user {user_id!r})"
        self.created_at: datetime | None = None  # the store's own creation time, when it was read

    def load(self) -> Any:
        app_name, user_id, session_id = self.peer_ids
        return self.source.run(
            self.source.service.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
        )

    def import_into(self, *, tenant: Tenant, loaded: Any, dry_run: bool) -> Imported:
        peer = loaded
        if peer is None:  # deleted from the old store since it was listed
            return Imported(created=False, items=0)
        rows = Session.objects.filter(tenant=tenant, framework=services.FRAMEWORK, **self.ids)
        stored = (rows if dry_run else rows.select_for_update()).first()
        held = (
            set() if stored is None else set(AdkEvent.objects.filter(session=stored).values_list("event_id", flat=True))
        )
        new_events = [event for event in peer.events if event.id not in held]
        result = Imported(created=stored is None, items=len(new_events))
        if dry_run or not (result.created or result.items):
            return result
        if stored is None:
            stored = services.adk_session_create(tenant=tenant, state={}, **self.ids).session
        imported = services.adk_session_import(
            session=stored,
            events=[json.loads(event.model_dump_json(exclude_none=True)) for event in new_events],
            state=peer.state,
            last_update_time=peer.last_update_time,
            source=self.source.kind if result.created else "",
            created_at=self.created_at if result.created else None,
        )
        for seq, delta in imported.user_deltas:
            user_services.adk_user_state_update(
                tenant=tenant,
                app_name=self.ids["app_name"],
                user_id=self.user_id,
                delta=delta,
                session_pk=stored.pk,
                event_seq=seq,
            )
        if imported.user_state:
            user_services.adk_user_state_update(
                tenant=tenant, app_name=self.ids["app_name"], user_id=self.user_id, delta=imported.user_state
            )
        return result
