"""LangGraph's checkpointers as an import source: ``SqliteSaver`` files and ``PostgresSaver``
databases. Checkpoints are read through the saver's own ``list`` and stored as
``AgentStateSaver`` stores them (its serializer's bytes, its text escapes); pending writes are read
from the saver's writes table, because a ``CheckpointTuple`` drops the two columns that key and
order them (``idx``, ``task_path``), and are stored with their bytes as written."""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import Iterator
from typing import Any

from agentstate.integrations.langgraph import escape_json, escape_text, split_checkpoint
from agentstate.tenancy.models import Tenant
from backends.langgraph.process import selectors, services
from userdata_app.imports import Imported


class LangGraphDatabase:
    """A LangGraph store's database, read only: a SQLite file (``sqlite``) or a PostgreSQL
    connection string, with the placeholder its queries take (``param``)."""

    def __init__(self, location: str, *, sqlite: bool) -> None:
        if sqlite:
            self.connection: Any = sqlite3.connect(f"file:{location}?mode=ro", uri=True, check_same_thread=False)
            self.param = "?"
        else:
            import psycopg
            from psycopg.rows import dict_row

            self.connection = psycopg.connect(location, autocommit=True, prepare_threshold=0, row_factory=dict_row)
            self.param = "%s"

    def close(self) -> None:
        self.connection.close()

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        # Raw: no ORM form (LangGraph's own SqliteSaver file: its tables have no Django models)
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        finally:
            cursor.close()
        return [tuple(row.values()) if isinstance(row, dict) else tuple(row) for row in rows]


class LangGraphSource(LangGraphDatabase):
    """One LangGraph checkpointer store; ``kind`` is ``langgraph-sqlite`` (a file) or
    ``langgraph-postgres`` (a connection string); threads naming no ``user_id`` in their metadata
    belong to ``default_user_id``, as with ``AgentStateSaver``."""

    unit = "sessions"  # what the summary counts

    def __init__(self, kind: str, location: str, *, default_user_id: str) -> None:
        super().__init__(location, sqlite=kind == "langgraph-sqlite")
        self.kind, self.default_user_id = kind, default_user_id
        if kind == "langgraph-sqlite":
            from langgraph.checkpoint.sqlite import SqliteSaver

            self.saver: Any = SqliteSaver(self.connection)
            self.writes_sql = (
                "SELECT checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value "
                "FROM writes WHERE thread_id = ?"
            )
        else:
            from langgraph.checkpoint.postgres import PostgresSaver

            self.saver = PostgresSaver(self.connection)
            self.writes_sql = (
                "SELECT checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, blob "
                "FROM checkpoint_writes WHERE thread_id = %s"
            )

    def sessions(self) -> Iterator[LangGraphPeerThread]:
        for (thread_id,) in self.rows("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id"):
            yield LangGraphPeerThread(self, thread_id)


def _typed(type_: str | None, data: bytes) -> dict[str, str]:
    return {"type": type_ or "empty", "data": base64.b64encode(bytes(data)).decode("ascii")}


class LangGraphPeerThread:
    def __init__(self, source: LangGraphSource, thread_id: str) -> None:
        self.source = source
        self.thread_id = escape_text(str(thread_id))
        self.peer_thread_id = thread_id
        self.user_id = source.default_user_id
        self.label = f"LangGraph thread {thread_id!r}"

    def load(self) -> tuple[list[Any], list[tuple]]:
        """The thread's checkpoints, oldest first, and its writes; its owner is the ``user_id`` its
        checkpoints' metadata names (LangGraph copies the graph's configurable there)."""
        config = {"configurable": {"thread_id": self.peer_thread_id}}
        checkpoints = sorted(self.source.saver.list(config), key=lambda t: t.checkpoint["id"])
        writes = self.source.rows(self.source.writes_sql, (self.peer_thread_id,))
        owners = [t.metadata["user_id"] for t in checkpoints if t.metadata.get("user_id") is not None]
        self.user_id = str(owners[0]) if owners else self.source.default_user_id
        return checkpoints, writes

    def import_into(self, *, tenant: Tenant, loaded: tuple[list[Any], list[tuple]], dry_run: bool) -> Imported:
        escape = escape_text
        stored_checkpoints, stored_writes = selectors.thread_stored_keys(tenant=tenant, thread_id=self.thread_id)
        checkpoints = [
            t
            for t in loaded[0]
            if (escape(t.config["configurable"]["checkpoint_ns"]), escape(t.checkpoint["id"])) not in stored_checkpoints
        ]
        writes = [w for w in loaded[1] if (escape(w[0]), escape(w[1]), escape(w[2]), w[4]) not in stored_writes]
        result = Imported(created=not stored_checkpoints, items=len(checkpoints) + len(writes))
        if dry_run:
            return result
        owner = {"user_id": self.user_id, "default_user_id": self.source.default_user_id}
        for t in checkpoints:
            parent = t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
            # Every channel's value: a version stored already is kept, so a thread's are stored once.
            stored, channel_values = split_checkpoint(self.source.saver.serde, t.checkpoint)
            services.checkpoint_put(
                tenant=tenant,
                thread_id=self.thread_id,
                **owner,
                checkpoint_ns=escape(t.config["configurable"]["checkpoint_ns"]),
                checkpoint_id=escape(t.checkpoint["id"]),
                parent_checkpoint_id=None if parent is None else escape(parent),
                checkpoint=_typed(*stored),
                metadata=escape_json(t.metadata),
                channel_versions=escape_json(t.checkpoint["channel_versions"]),
                channel_values=channel_values,
            )
        for checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type_, value in writes:
            services.writes_put(
                tenant=tenant,
                thread_id=self.thread_id,
                **owner,
                checkpoint_ns=escape(checkpoint_ns),
                checkpoint_id=escape(checkpoint_id),
                task_id=escape(task_id),
                task_path=escape(task_path),
                writes=[{"idx": idx, "channel": escape(channel), "value": _typed(type_, value)}],
                replace=False,
            )
        return result
