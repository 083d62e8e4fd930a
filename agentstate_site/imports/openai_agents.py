"""The OpenAI Agents SDK's ``SQLiteSession`` files as an import source. Each SDK session becomes
branch ``main`` as ``AgentStateSession`` names it, its items stored as that adapter stores them.
The SDK gives an item no id of its own but its row in ``agent_messages``: the import reads the
rows (in the order, and skipping the undecodable ones, as ``SQLiteSession.get_items`` does) and
keeps each row id as the message's client id, so a re-run stores no item twice."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from agentstate.tenancy.models import Tenant
from agentstate_site.imports import Imported
from sessions_app import services
from sessions_app.models import Message, Session

CLIENT_ID_PREFIX = "oa-import-"


class OpenAIAgentsSource:
    """One ``SQLiteSession`` file (the SDK's default table names); its sessions belong to
    ``default_user_id`` (the SDK's sessions name no user, ``AgentStateSession`` needs one)."""

    def __init__(self, kind: str, location: str, *, default_user_id: str) -> None:
        self.default_user_id = default_user_id
        self.connection = sqlite3.connect(f"file:{location}?mode=ro", uri=True)
        tables = {row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "message_structure" in tables:  # its agent_messages hold every branch's items
            self.connection.close()
            raise ValueError("an AdvancedSQLiteSession file: its branches and usage are not imported yet.")

    def close(self) -> None:
        self.connection.close()

    def sessions(self) -> Iterator[SdkPeerSession]:
        rows = self.connection.execute("SELECT session_id FROM agent_sessions ORDER BY session_id").fetchall()
        for (session_id,) in rows:
            yield SdkPeerSession(self, session_id)


class SdkPeerSession:
    def __init__(self, source: OpenAIAgentsSource, session_id: str) -> None:
        self.source, self.peer_session_id = source, session_id
        self.user_id = source.default_user_id
        self.label = f"Agents SDK session {session_id!r}"

    def load(self) -> list[tuple[int, Any]]:
        rows = self.source.connection.execute(
            "SELECT id, message_data FROM agent_messages WHERE session_id = ? ORDER BY id", (self.peer_session_id,)
        ).fetchall()
        items = []
        for row_id, data in rows:
            try:
                items.append((row_id, json.loads(data)))
            except (json.JSONDecodeError, TypeError):
                continue  # SQLiteSession.get_items skips it too
        return items

    def import_into(self, *, tenant: Tenant, loaded: list[tuple[int, Any]], dry_run: bool) -> Imported:
        from agentstate.integrations.openai_agents import FRAMEWORK_KEY, MAIN, _message, main_session_id

        agentstate_id = main_session_id(self.peer_session_id)
        stored = Session.objects.filter(tenant=tenant, user_id=self.user_id, session_id=agentstate_id).first()
        held: set[str | None] = set()
        if stored is not None:
            held.update(Message.objects.filter(session=stored).values_list("client_id", flat=True))
        messages = [
            {**_message(item), "client_id": f"{CLIENT_ID_PREFIX}{row_id}"}
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
                workspace_id=agentstate_id,
                metadata={FRAMEWORK_KEY: {"session_id": self.peer_session_id, "branch": MAIN}},
            )
        for start in range(0, len(messages), services.MAX_MESSAGES_PER_APPEND):
            services.message_append(session=stored, messages=messages[start : start + services.MAX_MESSAGES_PER_APPEND])
        return result
