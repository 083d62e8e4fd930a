"""The OpenAI Agents SDK's ``SQLiteSession`` files and ``SQLAlchemySession`` databases as an
import source (their default table names, which both share), and ``AdvancedSQLiteSession`` files
with their branches and each branch's usage per turn (``turn_usage``, stored as ``RunUsage`` rows:
what ``AgentStateSession.get_turn_usage`` and ``get_session_usage`` read). Each branch of an SDK
session (a plain session has ``main`` only) becomes the agentstate session ``AgentStateSession``
names it, its items stored as that adapter stores them (another branch a session of its own, not a
fork: the file does not say where it branched off). The SDK gives an item no id of its own but its
row in ``agent_messages``: the import reads the rows (in the order, and skipping the undecodable
ones, as the session's ``get_items`` does) and keeps each row id as the message's client id, so a
re-run stores no item twice; a turn's usage is stored where agentstate holds none for that turn."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from agentstate.integrations.openai_agents import (
    FRAMEWORK_KEY,
    MAIN,
    USAGE_COUNTS,
    branch_session_id,
    item_message,
    main_session_id,
)
from agentstate.tenancy.models import Tenant
from sessions_app import selectors, services
from sessions_app.models import Message, Session
from userdata_app.imports import Imported

CLIENT_ID_PREFIX = "oa-import-"
USAGE_SQL = (
    "SELECT user_turn_number, requests, input_tokens, output_tokens, total_tokens, input_tokens_details, "
    "output_tokens_details FROM turn_usage WHERE session_id = :session_id AND branch_id = :branch "
    "ORDER BY user_turn_number"
)


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
        # Raw: no ORM form (the SDK's own session store: its tables have no Django models)
        if self.kind == "openai-sqlite":
            return self.connection.execute(sql, params or {}).fetchall()
        from sqlalchemy import text

        async def fetch() -> list[tuple]:
            # Raw: idem, through SQLAlchemy's engine
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

    def load(self) -> tuple[list[tuple[int, Any]], list[dict[str, Any]]]:
        """The branch's items (row id, item) and, in an ``AdvancedSQLiteSession`` file, its usage per turn."""
        sql, params = self.source.items_sql(self.branch)
        rows = self.source.rows(sql, {**params, "session_id": self.peer_session_id})
        items = []
        for row_id, data in rows:
            try:
                items.append((row_id, json.loads(data)))
            except (json.JSONDecodeError, TypeError):
                continue  # SQLiteSession.get_items skips it too
        if not self.source.advanced:
            return items, []
        usage = [
            {
                "turn": turn,
                **{name: count or 0 for name, count in zip(USAGE_COUNTS, counts, strict=True)},
                "input_tokens_details": _details(input_details),
                "output_tokens_details": _details(output_details),
            }
            for turn, *counts, input_details, output_details in self.source.rows(
                USAGE_SQL, {"session_id": self.peer_session_id, "branch": self.branch}
            )
        ]
        return items, usage

    def import_into(
        self, *, tenant: Tenant, loaded: tuple[list[tuple[int, Any]], list[dict[str, Any]]], dry_run: bool
    ) -> Imported:
        items, usage = loaded
        agentstate_id = branch_session_id(self.peer_session_id, self.branch)
        stored = Session.objects.filter(tenant=tenant, user_id=self.user_id, session_id=agentstate_id).first()
        held: set[str | None] = set()
        held_turns: set[int] = set()
        if stored is not None:
            held.update(Message.objects.filter(session=stored).values_list("client_id", flat=True))
            held_turns.update(selectors.run_usage_list(session=stored).values_list("turn", flat=True))
        messages = [
            {**item_message(item), "client_id": f"{CLIENT_ID_PREFIX}{row_id}"}
            for row_id, item in items
            if f"{CLIENT_ID_PREFIX}{row_id}" not in held
        ]
        usage = [turn for turn in usage if turn["turn"] not in held_turns]
        result = Imported(created=stored is None, items=len(messages) + len(usage))
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
        for turn in usage:
            services.run_usage_record(session=stored, **turn)
        return result


def _details(text: str | None) -> dict[str, Any] | None:
    """Token details as ``AdvancedSQLiteSession.get_turn_usage`` reads them: none when not JSON."""
    try:
        return json.loads(text) if text else None
    except json.JSONDecodeError:
        return None
