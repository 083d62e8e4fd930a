"""Search over memory items (agentstate.search.search_memories): every path that writes or removes
an item keeps the index in step in its own transaction, checked through the raw index (the FTS5
table on SQLite, the tsvector column on PostgreSQL), and the any-word ranking."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agentstate.exceptions import InvalidInput
from agentstate.search.memories import search_memories
from tests import search_index
from userdata_app.erasure.execution import erase_subject
from userdata_app.erasure.storage import storage_cleanup
from userdata_app.memory.models import MemoryItem
from userdata_app.memory.selectors import MEMORY_INDEX
from userdata_app.memory.services import memory_batch, memory_items_expire
from userdata_app.models import ErasureRequest

pytestmark = pytest.mark.django_db


def raw_index_ids(word: str) -> list[int]:
    return search_index.raw_index_ids(MEMORY_INDEX, word)


def put(tenant, user_id: str, key: str, value, *labels: str, ttl=None) -> None:
    namespace = ["users", user_id, *labels]
    memory_batch(tenant=tenant, ops=[{"op": "put", "namespace": namespace, "key": key, "value": value, "ttl": ttl}])


def keys(tenant, query: str, user_id: str | None = "u1", **options) -> list[str]:
    return [hit.item.key for hit in search_memories(tenant, user_id, query, **options)]


def test_every_string_of_a_value_is_found_and_any_word_of_the_query_matches(tenant):
    put(tenant, "u1", "trip", {"note": "Flight to Zanzibar", "tags": ["travel", {"deep": "Quokka"}], "n": 7})
    put(tenant, "u1", "food", {"likes": "green tea"})
    put(tenant, "u1", "pet", {"kind": "cat", "name": "note"})  # "note" is a key above, not a value
    assert keys(tenant, "zanzibar") == ["trip"]
    assert keys(tenant, "QUOKKA") == ["trip"]
    assert set(keys(tenant, "tea zanzibar absent")) == {"trip", "food"}
    assert keys(tenant, "note") == ["pet"]
    assert keys(tenant, "7") == []  # numbers are not text
    assert keys(tenant, "teas") == []  # no stemming: a word matches itself whole
    put(tenant, "u1", "break", {"when": "tea-time"})
    assert set(keys(tenant, "tea")) == {"food", "break"}  # a hyphenated word holds its parts


def test_more_words_then_rarer_words_then_the_newest_come_first(tenant):
    put(tenant, "u1", "both", {"text": "alpha beta"})
    put(tenant, "u1", "common1", {"text": "alpha"})
    put(tenant, "u1", "rare", {"text": "beta"})
    put(tenant, "u1", "common2", {"text": "alpha"})
    hits = search_memories(tenant, "u1", "alpha beta")
    assert [hit.item.key for hit in hits] == ["both", "rare", "common2", "common1"]
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert hits[0].score >= 2 > hits[1].score > hits[2].score == hits[3].score >= 1


def test_a_search_is_scoped_to_the_tenant_the_user_and_the_namespace(tenant, other_tenant):
    put(tenant, "u1", "a", {"t": "walrus"}, "facts")
    put(tenant, "u1", "b", {"t": "walrus"}, "notes")
    put(tenant, "u2", "c", {"t": "walrus"})
    put(other_tenant, "u1", "d", {"t": "walrus"})
    assert set(keys(tenant, "walrus")) == {"a", "b"}
    assert keys(tenant, "walrus", namespace_prefix=["users", "u1", "facts"]) == ["a"]
    assert set(keys(tenant, "walrus", user_id=None)) == {"a", "b", "c"}
    assert keys(other_tenant, "walrus") == ["d"]
    assert len(raw_index_ids("walrus")) == 4


def test_the_filter_limit_and_offset_apply_to_the_ranked_items(tenant):
    for i in range(5):
        put(tenant, "u1", f"k{i}", {"t": "heron", "n": i % 2})
    assert keys(tenant, "heron", filter={"n": 1}) == ["k3", "k1"]
    assert keys(tenant, "heron", filter={"n": 0}, limit=1, offset=1) == ["k2"]
    assert keys(tenant, "heron", limit=2, offset=1) == ["k3", "k2"]


def test_an_expired_item_is_never_found(tenant):
    put(tenant, "u1", "old", {"t": "ibis"}, ttl=1)
    MemoryItem.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert keys(tenant, "ibis") == [] and len(raw_index_ids("ibis")) == 1


def test_writes_deletes_and_the_ttl_sweep_keep_the_index_in_step(tenant):
    put(tenant, "u1", "k", {"t": "before"})
    put(tenant, "u1", "k", {"t": "after"})  # an upsert: the row is updated in place
    assert raw_index_ids("before") == [] and keys(tenant, "after") == ["k"]
    put(tenant, "u1", "k", None)
    assert raw_index_ids("after") == []
    put(tenant, "u1", "brief", {"t": "egret"}, ttl=1)
    MemoryItem.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert memory_items_expire() == 1
    assert raw_index_ids("egret") == []


def test_an_erasure_removes_the_index_entries_in_its_own_transaction(tenant):
    put(tenant, "u1", "k", {"t": "pelican secrets"})
    put(tenant, "u2", "k", {"t": "pelican"})
    erase_subject(tenant=tenant, user_id="u1", scope=ErasureRequest.Scope.EVERYTHING)
    assert raw_index_ids("secrets") == []
    assert len(raw_index_ids("pelican")) == 1
    assert keys(tenant, "pelican") == [] and keys(tenant, "pelican", user_id="u2") == ["k"]


def test_the_clean_up_after_an_erasure_leaves_no_erased_word_in_the_sqlite_index_pages(tenant):
    """FTS5 marks a deleted row's words deleted but keeps them in its segments until they merge:
    the memory index is declared (``text_index``), so the clean-up compacts it too."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's FTS5 segments (PostgreSQL: the GIN index points at dead rows until VACUUM)")
    put(tenant, "u1", "k", {"t": "flamingoquill"})

    def in_index_pages() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT block FROM {MEMORY_INDEX.fts_table}_data")  # noqa: S608 (constant SQL)
            return any(b"flamingoquill" in bytes(row[0]) for row in cursor.fetchall() if row[0])

    erase_subject(tenant=tenant, user_id="u1", scope=ErasureRequest.Scope.EVERYTHING)
    assert raw_index_ids("flamingoquill") == [] and in_index_pages()
    storage_cleanup(scope=ErasureRequest.Scope.EVERYTHING)
    assert not in_index_pages()


@pytest.mark.parametrize("query", ["", "   ", "!!! ???", "a\x00b", "word \ud800", "x" * 10_001])
def test_queries_that_cannot_be_searched_are_refused_with_the_reason(tenant, query):
    with pytest.raises(InvalidInput) as refused:
        search_memories(tenant, "u1", query)
    assert "q" in refused.value.fields


@pytest.mark.parametrize(
    "query", ['NEAR(a b) "x', "a AND OR NOT b", "col:value ^start *", "a:* & b | !c <-> d", "é ñ 日本語", "-a"]
)
def test_any_query_that_passes_the_check_runs_without_a_database_error(tenant, query):
    put(tenant, "u1", "k", {"t": "a b c d"})
    search_memories(tenant, "u1", query)


def test_the_sqlite_triggers_that_keep_the_index_exist():
    """A later migration that makes SQLite rebuild the memory item table drops its triggers: it
    must create them again, or puts stop reaching the index."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's triggers")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = '{MEMORY_INDEX.table}'")  # noqa: S608
        names = {row[0] for row in cursor.fetchall()}
    assert {f"{MEMORY_INDEX.fts_table}_{event}" for event in ("insert", "delete", "update")} <= names


@pytest.mark.django_db(transaction=True)
def test_the_migration_indexes_the_items_already_stored(tenant):
    """Migration 0011's backfill: items written before it are found after it."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    before = [("userdata_app", "0010_memory_item")]
    executor.migrate(before)
    try:
        # Written as the code of that time wrote it: through the model as it was (today's put also
        # writes tables that came later).
        old_item = executor.loader.project_state(before).apps.get_model("userdata_app", "MemoryItem")
        old_item.objects.create(
            tenant_id=tenant.pk, user_id="u1", namespace="users.u1", key="k", value={"t": "older okapi"}
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert keys(tenant, "okapi") == ["k"]
