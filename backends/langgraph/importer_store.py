"""LangGraph's long-term memory stores as an import source: ``SqliteStore`` files and
``PostgresStore`` databases, their items stored as memory items (what ``AgentStateStore`` reads).
Items are read from the store's ``store`` table, because an ``Item`` drops its TTL and expiry; one
namespace is imported at a time, keeping each item's key, value, times, TTL and expiry. The store's
attribution rule holds: a namespace that does not name its person (``("users", <user_id>, ...)``)
is left out and reported, as ``AgentStateStore`` refuses a put there. An expired item, which the
old store's sweep would delete, is not brought."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from agentstate.exceptions import InvalidInput
from agentstate.tenancy.models import Tenant
from backends.langgraph.importer import LangGraphDatabase
from userdata_app.imports import Imported, NotImportable
from userdata_app.memory import selectors, services


class LangGraphStoreSource(LangGraphDatabase):
    """One LangGraph store; ``kind`` is ``langgraph-store-sqlite`` (a ``SqliteStore`` file) or
    ``langgraph-store-postgres`` (a ``PostgresStore`` connection string). Every item's owner is
    the person its namespace names, so no default user is needed."""

    unit = "namespaces"  # what the summary counts

    def __init__(self, kind: str, location: str) -> None:
        super().__init__(location, sqlite=kind == "langgraph-store-sqlite")

    def sessions(self) -> Iterator[StorePeerNamespace]:
        for (prefix,) in self.rows("SELECT DISTINCT prefix FROM store ORDER BY prefix"):
            yield StorePeerNamespace(self, prefix)


def _instant(value: Any) -> datetime | None:
    """A time as the store keeps it (PostgreSQL: a datetime; SQLite: text, UTC when it says no zone)."""
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class StorePeerNamespace:
    def __init__(self, source: LangGraphStoreSource, prefix: str) -> None:
        self.source, self.prefix = source, prefix
        self.namespace = selectors.namespace_labels(prefix)  # LangGraph joins the labels by "." too
        self.user_id = ""  # known once loaded
        self.label = f"LangGraph store namespace {tuple(self.namespace)!r}"

    def load(self) -> list[dict[str, Any]]:
        """The namespace's live items; NotImportable when it names no person."""
        try:
            self.user_id = services.namespace_owner(self.namespace)
        except InvalidInput as exc:
            raise NotImportable(f"names no person ({exc})") from None
        sql = (
            "SELECT key, value, created_at, updated_at, ttl_minutes, expires_at "  # noqa: S608 (a placeholder)
            f"FROM store WHERE prefix = {self.source.param} ORDER BY key"
        )
        now = timezone.now()
        items = []
        for key, value, created_at, updated_at, ttl_minutes, expires_at in self.source.rows(sql, (self.prefix,)):
            expires = _instant(expires_at)
            if expires is not None and expires <= now:
                continue  # expired: the old store's sweep deletes it, and agentstate would never read it
            items.append(
                {
                    "key": key,
                    "value": value if isinstance(value, dict) else json.loads(value),
                    "created_at": _instant(created_at) or now,
                    "updated_at": _instant(updated_at) or now,
                    "ttl_minutes": ttl_minutes,
                    "expires_at": expires,
                }
            )
        return items

    def import_into(self, *, tenant: Tenant, loaded: list[dict[str, Any]], dry_run: bool) -> Imported:
        stored = selectors.memory_keys_stored(tenant=tenant, namespace=self.namespace)
        items = [item for item in loaded if item["key"] not in stored]
        if items and not dry_run:
            services.memory_items_import(tenant=tenant, namespace=self.namespace, items=items)
        return Imported(created=not stored and bool(items), items=len(items))  # only expired items: nothing
