"""The worker's copy of a scope's vectors (userdata_app/memory/vector_cache.py): a search by meaning
answers what the database holds now, whatever wrote since (a put, a delete, an erasure, a
transaction rolled back, an expiry), and the copy stays within its bound. Transactional: a copy is
kept only once the search's transaction commits."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agentstate.exceptions import InvalidInput
from userdata_app.erasure.execution import erase_subject
from userdata_app.memory import vector_cache
from userdata_app.memory.models import MemoryGeneration, MemoryItem, MemoryVector
from userdata_app.memory.services import memory_batch

pytestmark = pytest.mark.usefixtures("transactional_db")

NORTH, EAST, WEST = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-1.0, 0.1, 0.0]


def put(tenant, user: str, key: str, vector: list[float] | None, **extra) -> None:
    op = {"op": "put", "namespace": ["users", user, "facts"], "key": key, "value": {"text": key}, **extra}
    if vector is not None:
        op["vectors"] = [{"path": "text", "vector": vector}]
    memory_batch(tenant=tenant, ops=[op])


def search(tenant, prefix: list[str], vector: list[float], **extra) -> list[tuple[str, float | None]]:
    op = {"op": "search", "namespace_prefix": prefix, "query": "q", "vector": vector, "limit": 10, **extra}
    return [(item["key"], item["score"]) for item in memory_batch(tenant=tenant, ops=[op])[0]]


def cached_vector_ids() -> set[int]:
    return {
        pk
        for entry in list(vector_cache._entries.values())
        if isinstance(entry, vector_cache.Matrix)
        for pk in entry.ids.tolist()
    }


def generation(tenant) -> int:
    return sum(MemoryGeneration.objects.filter(tenant_pk=tenant.pk).values_list("value", flat=True))


def test_every_write_to_items_or_vectors_moves_the_generation(tenant):
    """The triggers: whatever path writes (the service, a queryset's update or delete), the
    generation moves in the same transaction."""
    seen = [generation(tenant)]
    put(tenant, "ann", "a", NORTH)
    seen.append(generation(tenant))
    MemoryItem.objects.filter(tenant=tenant).update(value={"text": "b"})
    seen.append(generation(tenant))
    MemoryVector.objects.filter(item__tenant=tenant).delete()
    seen.append(generation(tenant))
    MemoryItem.objects.filter(tenant=tenant).delete()
    seen.append(generation(tenant))
    assert seen == sorted(set(seen)), seen  # strictly growing


def test_a_warm_search_reads_a_counter_and_the_page_and_a_put_is_seen(tenant):
    put(tenant, "ann", "north", NORTH)
    put(tenant, "ann", "east", EAST)
    assert [key for key, _ in search(tenant, ["users", "ann"], NORTH)] == ["north", "east"]
    with CaptureQueriesContext(connection) as queries:
        assert [key for key, _ in search(tenant, ["users", "ann"], NORTH)] == ["north", "east"]
    reads = [query["sql"] for query in queries.captured_queries if query["sql"].startswith("SELECT")]
    assert len(reads) == 2, reads  # the generation, then the page's items
    assert not any("memoryvector" in sql for sql in reads)  # no vector read again
    put(tenant, "ann", "north", WEST)  # its vector replaced
    put(tenant, "ann", "new", NORTH)
    found = search(tenant, ["users", "ann"], NORTH)
    assert [key for key, _ in found] == ["new", "east", "north"]
    assert found[0][1] == pytest.approx(1.0)


def test_a_filtered_search_and_an_unindexed_put_use_the_copy_exactly(tenant):
    put(tenant, "ann", "north", NORTH)
    put(tenant, "ann", "east", EAST)
    search(tenant, ["users", "ann"], NORTH)
    put(tenant, "ann", "north", None)  # written without an index: no vector now
    assert search(tenant, ["users", "ann"], NORTH) == [("east", 0.0), ("north", None)]
    assert search(tenant, ["users", "ann"], EAST, filter={"text": "east"}) == [("east", pytest.approx(1.0))]


def test_an_erased_persons_vectors_are_never_served_and_leave_the_copy(tenant):
    put(tenant, "ann", "ann-north", NORTH)
    put(tenant, "bob", "bob-east", EAST)
    assert {key for key, _ in search(tenant, ["users"], NORTH)} == {"ann-north", "bob-east"}
    ann_vectors = set(MemoryVector.objects.filter(item__user_id="ann").values_list("pk", flat=True))
    assert ann_vectors <= cached_vector_ids()
    with transaction.atomic():
        erase_subject(tenant=tenant, user_id="ann", scope="all")
    assert search(tenant, ["users"], NORTH) == [("bob-east", 0.0)]
    assert not ann_vectors & cached_vector_ids()


def test_a_search_in_a_transaction_rolled_back_leaves_no_copy(tenant):
    """On SQLite the ids of a write rolled back are given again: a copy read inside it must not
    outlive it. A search after a write in one transaction lists the write (PostgreSQL moves the
    counters only as the transaction commits: its own pending ones count)."""
    put(tenant, "ann", "east", EAST)
    search(tenant, ["users", "ann"], NORTH)  # the scope's copy, warm

    class Undo(Exception):
        pass

    @transaction.atomic
    def put_search_undo():
        put(tenant, "ann", "north", NORTH)
        assert search(tenant, ["users", "ann"], NORTH)[0][0] == "north"
        raise Undo

    with pytest.raises(Undo):
        put_search_undo()
    put(tenant, "ann", "north", WEST)  # may take the ids the rolled-back put had
    assert [key for key, _ in search(tenant, ["users", "ann"], NORTH)] == ["east", "north"]


def test_an_expired_item_drops_out_with_no_write(tenant, monkeypatch):
    put(tenant, "ann", "brief", NORTH, ttl=1)
    put(tenant, "ann", "kept", EAST)
    assert [key for key, _ in search(tenant, ["users", "ann"], NORTH)] == ["brief", "kept"]
    now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: now() + timedelta(minutes=2))
    assert [key for key, _ in search(tenant, ["users", "ann"], NORTH)] == ["kept"]


def test_the_bound_evicts_and_a_search_comparing_more_is_refused(tenant, settings):
    put(tenant, "ann", "north", NORTH)
    put(tenant, "bob", "east", EAST)
    settings.MEMORY_VECTOR_CACHE_MB = 1
    search(tenant, ["users", "ann"], NORTH)
    search(tenant, ["users", "bob"], NORTH)
    assert 0 < vector_cache.held_bytes() <= 1024 * 1024
    settings.MEMORY_VECTOR_CACHE_MB = 200 / 1024 / 1024  # 200 bytes: one scope's listing at most
    search(tenant, ["users", "ann"], NORTH)
    assert vector_cache.held_bytes() <= 200
    settings.MEMORY_VECTOR_CACHE_MB = 20 / 1024 / 1024  # 20 bytes: one vector of 12, not two
    with pytest.raises(InvalidInput, match=r"namespace_prefix: has 2 vector\(s\) under it"):
        search(tenant, ["users"], NORTH)
    assert search(tenant, ["users"], NORTH, filter={"text": "north"}) == [("north", pytest.approx(1.0))]


@pytest.mark.postgres
def test_a_put_waits_for_no_other_persons_open_transaction(postgres_only, tenant):
    """Two people whose user ids hash to one of the tenant's counter rows: one's put goes through
    while a transaction that wrote the other's memories is still open (a long batch, an erasure)."""
    took: list[float] = []

    def other_person_puts():
        started = time.perf_counter()
        put(tenant, "w91", "meanwhile", EAST)
        took.append(time.perf_counter() - started)
        connections.close_all()

    with transaction.atomic():
        put(tenant, "writer-a", "long", NORTH)  # "writer-a" and "w91": one bucket of 64
        writer = threading.Thread(target=other_person_puts)
        writer.start()
        writer.join(timeout=4)
        assert took, "the other person's put waited for this transaction"
    assert [key for key, _ in search(tenant, ["users", "w91"], EAST)] == ["meanwhile"]
