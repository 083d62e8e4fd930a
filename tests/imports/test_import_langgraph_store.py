"""import_sessions from LangGraph's own stores: after the import, AgentStateStore's get, search and
list_namespaces give what SqliteStore/PostgresStore gave (keys, values, times), TTLs kept; a
namespace that names no person is left out, as the store refuses it."""

from __future__ import annotations

import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from agentstate.integrations.langgraph_store import AgentStateStore, user_namespace
from tests.client.keys import api_key_new
from tests.imports.test_import_adk import peer_postgres_url  # noqa: F401 (a fixture)
from userdata_app.erasure.registry import subject_hash
from userdata_app.memory.models import MemoryItem
from userdata_app.models import ErasedSubject

pytestmark = pytest.mark.django_db(transaction=True)

ANA = user_namespace("ana.b@example.org", "memories")  # a user id with ".": written "%2E" in the label
BO = user_namespace("bo", "prefs")


def _fill(store) -> None:
    """Items put by LangGraph's own store: two people, a nested namespace, a TTL, an overwrite, and
    a namespace that names no person."""
    store.put(ANA, "food", {"likes": ["pizza", "tea"], "since": 2021})
    store.put(ANA, "trip", {"to": "Lisbon", "nested": {"days": 3}}, ttl=90)
    store.put((*ANA, "work"), "role", {"title": "engineer"})
    store.put(BO, "lang", {"code": "pt"})
    store.put(BO, "lang", {"code": "pt-BR"})  # the second put wins, its update time with it
    store.put(("docs", "shared"), "faq", {"text": "not anyone's"})


def _utc(moment):
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)  # SqliteStore's times are UTC


def _item(item) -> tuple:
    return (item.namespace, item.key, item.value, _utc(item.created_at), _utc(item.updated_at))


def _seen(store) -> dict:
    """What a graph's nodes read: each person's items (get and search) and the namespaces listed."""
    return {
        "namespaces": store.list_namespaces(prefix=("users",)),
        "search": {
            prefix: sorted(_item(i) for i in store.search(prefix, limit=100, refresh_ttl=False))
            for prefix in (ANA[:2], BO[:2])
        },
        "get": [
            _item(store.get(namespace, key, refresh_ttl=False))
            for namespace, key in [(ANA, "food"), (ANA, "trip"), ((*ANA, "work"), "role"), (BO, "lang")]
        ],
    }


def _import(tenant, kind, location, *args) -> str:
    out = StringIO()
    call_command("import_sessions", "--tenant", tenant.slug, "--from", kind, location, *args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.fixture
def sqlite_store(tmp_path):
    path = str(tmp_path / "store.db")
    connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    store = SqliteStore(connection)
    store.setup()
    _fill(store)
    yield "langgraph-store-sqlite", path, store
    connection.close()


@pytest.fixture
def postgres_store(peer_postgres_url):  # noqa: F811 (the fixture imported above)
    url = "postgresql://" + peer_postgres_url.split("://", 1)[1]
    with PostgresStore.from_conn_string(url) as store:
        store.setup()
        _fill(store)
        yield "langgraph-store-postgres", url, store


@pytest.mark.parametrize("peer", ["sqlite_store", "postgres_store"])
def test_the_store_reads_through_agentstate_what_it_read_from_its_own(live_server, tenant, peer, request):
    kind, location, store = request.getfixturevalue(peer)
    before = _seen(store)

    out = _import(tenant, kind, location, "--quiet")

    assert "4 of 4 namespaces looked at" in out
    assert "imported 3 new namespaces, 0 extended, 4 items; 0 users refused, 1 namespaces left out" in out
    assert "Left out: LangGraph store namespace ('docs', 'shared'): names no person" in out
    with AgentStateStore(live_server.url, api_key_new(tenant)) as agentstate:
        assert _seen(agentstate) == before
    trip = MemoryItem.objects.get(key="trip")  # the TTL and the moment it ends, as the old store had them
    peer_ttl, peer_expiry = _peer_ttl(store, "trip")
    assert trip.ttl_minutes == peer_ttl == 90
    assert abs(trip.expires_at - peer_expiry) < timedelta(milliseconds=1)
    assert trip.user_id == "ana.b@example.org" and not MemoryItem.objects.filter(key="faq").exists()


def _peer_ttl(store, key: str) -> tuple:
    """An item's TTL and expiry as the old store's table holds them (its Item shows neither)."""
    cursor = store.conn.cursor()
    cursor.execute(f"SELECT ttl_minutes, expires_at FROM store WHERE key = '{key}'")  # noqa: S608 (a test's constant)
    row = cursor.fetchone()
    ttl, expires_at = tuple(row.values()) if isinstance(row, dict) else row
    return ttl, _utc(expires_at if isinstance(expires_at, datetime) else datetime.fromisoformat(expires_at))


def test_a_rerun_imports_nothing_and_new_items_are_added(live_server, tenant, sqlite_store):
    kind, location, store = sqlite_store
    _import(tenant, kind, location)
    assert "imported 0 new namespaces, 0 extended, 0 items" in _import(tenant, kind, location)
    assert MemoryItem.objects.count() == 4

    store.put(BO, "city", {"name": "Porto"})
    store.put(user_namespace("cy"), "first", {"seen": True})
    assert "imported 1 new namespaces, 1 extended, 2 items" in _import(tenant, kind, location)
    with AgentStateStore(live_server.url, api_key_new(tenant)) as agentstate:
        assert _seen(agentstate) == _seen(store)


class _Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def test_dry_run_an_expired_item_and_an_erased_owner(tenant, sqlite_store, monkeypatch):
    kind, location, store = sqlite_store
    store.put(BO, "gone", {"old": True}, ttl=1)
    with sqlite3.connect(location) as db:  # expired a minute ago, not yet swept by the old store
        db.execute("UPDATE store SET expires_at = datetime('now', '-1 minute') WHERE key = 'gone'")
    db.close()
    monkeypatch.setattr(sys, "stderr", terminal := _Terminal())
    assert "would import 3 new namespaces, 0 extended, 4 items" in _import(tenant, kind, location, "--dry-run")
    assert not MemoryItem.objects.exists()
    assert terminal.getvalue().endswith("] 4/4 namespaces, 4 items\n")  # the progress bar, on a terminal

    key_id, digest = subject_hash(tenant_slug=tenant.slug, user_id="bo")
    now = timezone.now()
    ErasedSubject.objects.create(subject_hash=digest, key_id=key_id, scope="user_data", erased_at=now, grace_until=now)
    out = _import(tenant, kind, location)
    assert "Refused user 'bo': erased on request" in out
    assert "imported 2 new namespaces, 0 extended, 3 items; 1 users refused" in out
    assert not MemoryItem.objects.filter(user_id="bo").exists()
