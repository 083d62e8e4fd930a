"""The OpenAI Agents SDK's ``SQLiteSession`` files and ``SQLAlchemySession`` databases as an
import source (their default table names, which both share), and ``AdvancedSQLiteSession`` files
with their branches. Each branch of an SDK session (a plain session has ``main`` only) becomes the
agentstate session ``AgentStateSession`` names it, its items stored as that adapter stores them
(another branch a session of its own, not a fork: the file does not say where it branched off).
The SDK gives an item no id of its own but its row in ``agent_messages``: the import reads the
rows (in the order, and skipping the undecodable ones, as the session's ``get_items`` does) and
keeps each row id as the message's client id, so a re-run stores no item twice."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from agentstate.integrations.openai_agents import FRAMEWORK_KEY, MAIN, branch_session_id, item_message, main_session_id
from agentstate.tenancy.models import Tenant
from agentstate_site.imports import Imported
from sessions_app import services
from sessions_app.models import Message, Session

CLIENT_ID_PREFIX = "oa-import-"


class OpenAIAgentsSource:
    """One SDK store, ``openai-sqlite`` (a ``SQLiteSession`` file) or ``openai-sqlalchemy`` (a
    ``SQLAlchemySession`` database URL); its sessions belong to ``default_user_id`` (the SDK's
    sessions name no user, ``AgentStateSession`` needs one)."""

    unit = "sessions"  # what the summary counts

    def __init__(self, kind: str, location: str, *, default_user_id: str) -> None:
        self.kind, self.default_user_id = kind, default_user_id
        if kind == "openai-sqlite":
            self.connection: Any = sqlite3.connect(f"file:{location}?mode=ro", uri=True)
            self.order = "id"  # SQLiteSession's order
            tables = {row[0] for row in self.rows("SELECT name FROM sqlite_master WHERE type = 'table'")}
            self.advanced = "message_structure" in tables  # an AdvancedSQLiteSession file: branches
        else:
            from sqlalchemy.ext.asyncio import create_async_engine

            self.loop = asyncio.new_event_loop()
            self.engine = create_async_engine(location)
            self.order = "created_at, id"  # SQLAlchemySession's order
            self.advanced = False

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple]:
        if self.kind == "openai-sqlite":
            return self.connection.execute(sql, params or {}).fetchall()
        from sqlalchemy import text

        async def fetch() -> list[tuple]:
            async with self.engine.connect() as connection:
                return [tuple(row) for row in await connection.execute(text(sql), params or {})]

        return self.loop.run_until_complete(fetch())

    def close(self) -> None:
        if self.kind == "openai-sqlite":
            self.connection.close()
        else:
            self.loop.run_until_complete(self.engine.dispose())
            self.loop.close()

    def sessions(self) -> Iterator[SdkPeerSession]:
        for (session_id,) in self.rows("SELECT session_id FROM agent_sessions ORDER BY session_id"):
            branches = [MAIN]
            if self.advanced:
                sql = "SELECT DISTINCT branch_id FROM message_structure WHERE session_id = :session_id"
                found = {row[0] for row in self.rows(sql, {"session_id": session_id})}
                branches = [MAIN, *sorted(found - {MAIN})]
            for branch in branches:
                yield SdkPeerSession(self, session_id, branch)

    def items_sql(self, branch: str) -> tuple[str, dict[str, Any]]:
        """The query of a branch's rows as its session's ``get_items`` orders them."""
        if not self.advanced:
            return (
                f"SELECT id, message_data FROM agent_messages WHERE session_id = :session_id ORDER BY {self.order}",  # noqa: S608 (a constant order)
                {},
            )
        return (
            "SELECT m.id, m.message_data FROM agent_messages m JOIN message_structure s ON m.id = s.message_id "
            "WHERE m.session_id = :session_id AND s.branch_id = :branch ORDER BY s.sequence_number",
            {"branch": branch},
        )


class SdkPeerSession:
    def __init__(self, source: OpenAIAgentsSource, session_id: str, branch: str) -> None:
        self.source, self.peer_session_id, self.branch = source, session_id, branch
        self.user_id = source.default_user_id
        self.label = f"Agents SDK session {session_id!r}" + ("" if branch == MAIN else f" branch {branch!r}")

    def load(self) -> list[tuple[int, Any]]:
        sql, params = self.source.items_sql(self.branch)
        rows = self.source.rows(sql, {**params, "session_id": self.peer_session_id})
        items = []
        for row_id, data in rows:
            try:
                items.append((row_id, json.loads(data)))
            except (json.JSONDecodeError, TypeError):
                continue  # SQLiteSession.get_items skips it too
        return items

    def import_into(self, *, tenant: Tenant, loaded: list[tuple[int, Any]], dry_run: bool) -> Imported:
        agentstate_id = branch_session_id(self.peer_session_id, self.branch)
        stored = Session.objects.filter(tenant=tenant, user_id=self.user_id, session_id=agentstate_id).first()
        held: set[str | None] = set()
        if stored is not None:
            held.update(Message.objects.filter(session=stored).values_list("client_id", flat=True))
        messages = [
            {**item_message(item), "client_id": f"{CLIENT_ID_PREFIX}{row_id}"}
            for row_id, item in loaded
            if f"{CLIENT_ID_PREFIX}{row_id}" not in held
        ]
        result = Imported(created=stored is None, items=len(messages))
        if dry_run:
            return result
        if stored is None:
            stored = services.session_create(
                tenant=tenant,
                user_id=self.user_id,
                session_id=agentstate_id,
                workspace_id=main_session_id(self.peer_session_id),  # a branch's family, as the adapter finds it
                metadata={FRAMEWORK_KEY: {"session_id": self.peer_session_id, "branch": self.branch}},
            )
        for start in range(0, len(messages), services.MAX_MESSAGES_PER_APPEND):
            services.message_append(session=stored, messages=messages[start : start + services.MAX_MESSAGES_PER_APPEND])
        return result
