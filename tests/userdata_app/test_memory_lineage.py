"""Memory lineage: an item records the sessions it was made from, and a session's deletion takes
the items made only from it (the tenant's memory policy may keep them, flagged), whichever way
the session goes: the API, retention, an erasure of process state."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agentstate.exceptions import Held, InvalidInput
from sessions_app import services as sessions
from sessions_app.models import RetentionPolicy, Session
from sessions_app.services.retention import retention_apply
from userdata_app.memory.models import MemoryItem, MemoryPolicy, MemorySource
from userdata_app.memory.selectors import items_sources
from userdata_app.memory.services import memory_batch

NS = ["users", "ada", "facts"]


def put(tenant, key: str, *sources: dict, value: dict | None = None) -> None:
    op = {"op": "put", "namespace": NS, "key": key, "value": value or {"k": key}, "sources": list(sources)}
    memory_batch(tenant=tenant, ops=[op])


def get(tenant, key: str) -> dict | None:
    [item] = memory_batch(tenant=tenant, ops=[{"op": "get", "namespace": NS, "key": key, "with_sources": True}])
    return item


def keys(tenant) -> list[str]:
    return sorted(MemoryItem.objects.filter(tenant=tenant).values_list("key", flat=True))


def of(session_id: str, ref: str = "") -> dict:
    return {"session_id": session_id, **({"ref": ref} if ref else {})}


@pytest.fixture
def two_sessions(tenant):
    return [sessions.session_create(tenant=tenant, user_id="ada", session_id=s) for s in ("s1", "s2")]


@pytest.mark.django_db
def test_an_item_made_only_from_a_deleted_session_goes_with_it_one_made_from_two_stays(tenant, two_sessions, api):
    put(tenant, "only-s1", of("s1", "m1"))
    put(tenant, "both", of("s1"))
    put(tenant, "both", of("s2"))  # another run adds its session: the sources add up
    put(tenant, "none")
    assert get(tenant, "both")["sources"] == [{"session_id": "s1"}, {"session_id": "s2"}]
    assert get(tenant, "only-s1")["sources"] == [{"session_id": "s1", "ref": "m1"}]
    assert get(tenant, "none")["sources"] == []  # made of no session: says so

    response = api.delete("/api/v1/users/ada/sessions/s1/")
    assert response.status_code == 204, response.content
    assert keys(tenant) == ["both", "none"]
    assert get(tenant, "both")["sources"] == [{"session_id": "s2"}]

    sessions.session_delete(session=two_sessions[1])
    assert keys(tenant) == ["none"]


@pytest.mark.django_db
def test_a_source_is_recorded_once_however_often_it_is_put(tenant, two_sessions):
    for _ in range(2):
        put(tenant, "k", of("s1", "e1"), of("s1", "e1"))
    assert get(tenant, "k")["sources"] == [{"session_id": "s1", "ref": "e1"}]


@pytest.mark.django_db
def test_a_read_returns_sources_only_when_asked_as_older_clients_expect(tenant, two_sessions):
    put(tenant, "k", of("s1"))
    [item, [hit]] = memory_batch(
        tenant=tenant,
        ops=[{"op": "get", "namespace": NS, "key": "k"}, {"op": "search", "namespace_prefix": NS}],
    )
    assert set(item) == {"namespace", "key", "value", "created_at", "updated_at"}
    assert "sources" not in hit


@pytest.mark.django_db
def test_another_persons_session_or_one_kept_elsewhere_is_recorded_and_not_linked(tenant, two_sessions):
    sessions.session_create(tenant=tenant, user_id="bob", session_id="b1")
    put(tenant, "k", of("b1"), of("elsewhere"))
    Session.objects.filter(user_id="bob").delete()
    assert get(tenant, "k")["sources"] == [{"session_id": "b1"}, {"session_id": "elsewhere"}]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "sources, field",
    [
        ("s1", "ops[0].sources"),
        ([{"session_id": "s1", "thread_id": "t"}], "ops[0].sources[0]"),
        ([{}], "ops[0].sources[0]"),
        ([{"session_id": 1}], "ops[0].sources[0].session_id"),
        ([{"session": "s1"}], "ops[0].sources[0]"),
    ],
)
def test_bad_sources_are_refused_and_nothing_is_stored(tenant, sources, field):
    op = {"op": "put", "namespace": NS, "key": "k", "value": {}, "sources": sources}
    with pytest.raises(InvalidInput) as refused:
        memory_batch(tenant=tenant, ops=[op])
    assert field in refused.value.fields
    assert keys(tenant) == []


@pytest.mark.django_db
def test_the_tenants_memory_policy_keeps_an_orphan_flagged_for_review(tenant, two_sessions):
    MemoryPolicy.objects.create(tenant=tenant, keep_derived=True)
    put(tenant, "only-s1", of("s1"))
    sessions.session_delete(session=two_sessions[0])
    assert get(tenant, "only-s1")["sources"] == [{"session_id": "s1", "session_deleted": True}]


@pytest.mark.django_db
def test_retention_deleting_an_ended_session_takes_its_derived_items_and_counts_them(tenant, two_sessions):
    put(tenant, "only-s1", of("s1"))
    put(tenant, "both", of("s1"), of("s2"))
    ended = timezone.now() - timedelta(days=40)
    Session.objects.filter(pk=two_sessions[0].pk).update(ended_at=ended, updated_at=ended)
    RetentionPolicy.objects.create(tenant=tenant, delete_ended_after_days=30)

    dry = retention_apply(tenant=tenant, dry_run=True)
    assert keys(tenant) == ["both", "only-s1"]
    run = retention_apply(tenant=tenant)
    assert keys(tenant) == ["both"]
    assert run.counts == dry.counts
    assert run.derived == dry.derived == {tenant.slug: {"memories": 1}}  # "only-s1", named apart


@pytest.mark.django_db(transaction=True)
def test_the_migration_derives_the_sources_of_adk_memories_stored_before_it(tenant):
    """Migration 0018 on rows written before it: an ADK memory's session id (in its value) becomes
    its source, linked where the session is kept here; other items have none."""
    from django.db.migrations.executor import MigrationExecutor

    before = [("userdata_app", "0017_erasure_receipt_withheld")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        old_session = old.get_model("sessions_app", "Session")
        old_item = old.get_model("userdata_app", "MemoryItem")
        kept = old_session.objects.create(tenant_id=tenant.pk, user_id="ada", session_id="a%2Fb", app_name="notes.app")
        adk = "users.ada.adk-memory.notes%2Eapp"
        for namespace, key, value in [
            (adk, "e1", {"text": "kept here", "session_id": "a/b"}),
            (adk, "e2", {"text": "kept elsewhere", "session_id": "other"}),
            (adk, "m1", {"text": "add_memory's", "custom_metadata": {}}),
            ("users.ada.facts", "lg", {"session_id": "a/b"}),  # not ADK's: its value is the caller's
        ]:
            old_item.objects.create(tenant_id=tenant.pk, user_id="ada", namespace=namespace, key=key, value=value)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    items = {item.key: item.pk for item in MemoryItem.objects.all()}
    sources = items_sources(items.values())
    assert sources[items["e1"]] == [{"session_id": "a%2Fb", "app_name": "notes.app", "ref": "e1"}]
    assert sources[items["e2"]] == [{"session_id": "other", "app_name": "notes.app", "ref": "e2"}]
    assert items["m1"] not in sources and items["lg"] not in sources

    sessions.session_delete(session=Session.objects.get(pk=kept.pk))
    assert keys(tenant) == ["e2", "lg", "m1"]


@pytest.mark.django_db
def test_a_hold_on_a_session_keeps_the_memories_made_from_it_through_an_erasure(tenant, two_sessions, settings):
    from agentstate.holds.services import legal_hold_place
    from userdata_app.erasure import erasure_execute
    from userdata_app.models import ErasureRequest, ErasureSubject

    settings.ERASURE_HMAC_KEYS, settings.ERASURE_HMAC_KEY_ID = {"k1": "secret"}, "k1"
    put(tenant, "from-s1", of("s1"))
    put(tenant, "from-s2", of("s2"))
    put(tenant, "none")
    legal_hold_place(tenant=tenant, user_id="ada", session_pk=two_sessions[0].pk, reference="CASE-1", reason="r")
    request = ErasureRequest.objects.create(scope=ErasureRequest.Scope.USER_DATA, due_on="2099-01-01")
    ErasureSubject.objects.create(request=request, tenant=tenant, user_id="ada")
    ErasureRequest.objects.filter(pk=request.pk).update(status=ErasureRequest.Status.VERIFIED)
    with pytest.raises(Held, match="CASE-1 keeps the held sessions: 1 memories"):
        erasure_execute(request=request)
    assert erasure_execute(request=request, withhold_held=True).counts["memories"] == 2
    assert keys(tenant) == ["from-s1"]


@pytest.mark.django_db
def test_the_admin_links_a_session_to_its_memories_and_a_memory_to_its_sources(
    tenant, two_sessions, client, admin_user
):
    put(tenant, "from-s1", of("s1", "m1"))
    put(tenant, "none")
    client.force_login(admin_user)
    session_page = client.get(f"/admin/sessions_app/session/{two_sessions[0].pk}/change/").content.decode()
    memories = f"/admin/userdata_app/memoryitem/?derived_from_session={two_sessions[0].pk}"
    assert f'<a href="{memories}">1 memories</a>' in session_page

    listed = client.get(memories).content.decode()
    item = MemoryItem.objects.get(key="from-s1")
    assert f"/admin/userdata_app/memoryitem/{item.pk}/change/" in listed
    assert f"/admin/userdata_app/memoryitem/{MemoryItem.objects.get(key='none').pk}/change/" not in listed
    item_page = client.get(f"/admin/userdata_app/memoryitem/{item.pk}/change/").content.decode()
    assert f'<a href="/admin/sessions_app/session/{two_sessions[0].pk}/change/">session s1</a>, m1' in item_page


@pytest.mark.django_db
def test_clearing_a_conversation_forgets_what_was_made_only_from_it(tenant, two_sessions, api):
    """The Agents SDK's clear_session (a clear of every message): the session stays, and the
    memories made only from it go as if it were deleted."""
    put(tenant, "only-s1", of("s1"))
    put(tenant, "both", of("s1"), of("s2"))
    sessions.message_append(session=two_sessions[0], messages=[{"content": "I like tea"}])
    assert api.post("/api/v1/users/ada/sessions/s1/messages/clear/", {}, format="json").status_code == 200
    assert keys(tenant) == ["both"]
    assert get(tenant, "both")["sources"] == [{"session_id": "s2"}]


@pytest.mark.django_db
def test_a_batch_of_a_thousand_sourced_puts_records_every_source(tenant, two_sessions):
    """ADK adds a long session's events in batches of 1,000, each with its source."""
    ops = [
        {"op": "put", "namespace": NS, "key": f"e{i}", "value": {}, "sources": [of("s1", f"e{i}")]} for i in range(1000)
    ]
    memory_batch(tenant=tenant, ops=ops)
    assert MemorySource.objects.filter(linked_session=two_sessions[0]).count() == 1000


@pytest.mark.django_db
def test_a_memory_made_from_a_held_session_cannot_be_deleted_by_the_store(tenant, two_sessions):
    """The hold is on the session, not the person: the store's delete of a memory made from it is
    refused all the same, nothing deleted; a memory from another session goes."""
    from agentstate.holds.services import legal_hold_place

    put(tenant, "from-s1", of("s1"))
    put(tenant, "from-s2", of("s2"))
    legal_hold_place(tenant=tenant, user_id="ada", session_pk=two_sessions[0].pk, reference="CASE-2", reason="r")
    for op in (
        {"op": "put", "namespace": NS, "key": "from-s1", "value": None},
        {"op": "forget", "namespace": NS, "key": "from-s1"},
    ):
        with pytest.raises(Held, match="CASE-2"):
            memory_batch(tenant=tenant, ops=[op])
    memory_batch(tenant=tenant, ops=[{"op": "put", "namespace": NS, "key": "from-s2", "value": None}])
    assert keys(tenant) == ["from-s1"]


@pytest.mark.django_db
def test_the_admin_lists_the_memories_kept_for_review_and_a_session_page_links_them(
    tenant, two_sessions, client, admin_user
):
    MemoryPolicy.objects.create(tenant=tenant, keep_derived=True)
    put(tenant, "from-s1", of("s1"))
    put(tenant, "from-s2", of("s2"))
    put(tenant, "none")
    sessions.session_delete(session=two_sessions[0])
    client.force_login(admin_user)
    review = f"/admin/userdata_app/memoryitem/?kept_for_review=1&amp;tenant__id__exact={tenant.pk}"
    session_page = client.get(f"/admin/sessions_app/session/{two_sessions[1].pk}/change/").content.decode()
    assert f'<a href="{review}">1 memories of the tenant kept for review</a>' in session_page
    listed = client.get(review.replace("&amp;", "&")).content.decode()
    kept, other = MemoryItem.objects.get(key="from-s1"), MemoryItem.objects.get(key="from-s2")
    assert f"/admin/userdata_app/memoryitem/{kept.pk}/change/" in listed
    assert f"/admin/userdata_app/memoryitem/{other.pk}/change/" not in listed


@pytest.mark.django_db
def test_an_erasure_of_process_state_counts_the_memories_made_only_from_its_sessions(tenant, two_sessions):
    """Erasing a person's sessions and not their user data (the map's process state alone, as a
    re-applied erasure limited to what existed then may) counts the memories that went with them
    in the receipt's counts."""
    from django.db import transaction

    from agentstate.subject_data import subject_erase
    from agentstate.subjects import PROCESS_STATE

    put(tenant, "only-s1", of("s1"))
    put(tenant, "none")
    with transaction.atomic():
        counts = subject_erase(tenant=tenant, user_id="ada", kinds=[PROCESS_STATE])
    assert counts["memories"] == 1
    assert keys(tenant) == ["none"]
