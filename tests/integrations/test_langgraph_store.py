"""AgentStateStore against a live server: LangGraph's own store tests (ported from its
InMemoryStore and PostgresStore suites, with every stored namespace under ``("users", <id>)``, the
attribution rule), a graph driven by LangGraph's runner, TTLs, and the person's rights (erasure,
export) through the raw table. The differential tests against InMemoryStore and PostgresStore are
in test_langgraph_differential.py."""

from __future__ import annotations

import asyncio
import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from typing_extensions import TypedDict

from agentstate.client import ValidationError
from agentstate.integrations.langgraph_store import AgentStateStore, user_namespace
from tests.quick_loop import first_of_each_kind
from userdata_app.erasure import erasure_execute
from userdata_app.memory.models import MemoryItem
from userdata_app.models import ErasureRequest, ErasureSubject
from userdata_app.selectors import subject_export

U = ("users", "u1")  # the namespace root of LangGraph's examples, attributed to a person


@pytest.fixture
def store_key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="langgraph-store", tenant=tenant, scope="agent")[1]


@pytest.fixture
def store(live_server, store_key):
    with AgentStateStore(live_server.url, store_key) as store:
        yield store


def raw_rows(user_id: str) -> list[tuple[str, str]]:
    """The table's rows of a person, read with SQL (not through the model's manager)."""
    with connection.cursor() as cursor:
        table, key = MemoryItem._meta.db_table, connection.ops.quote_name("key")
        sql = f"SELECT namespace, {key} FROM {table} WHERE user_id = %s ORDER BY 1, 2"  # noqa: S608 (names from the model)
        cursor.execute(sql, [user_id])
        return list(cursor.fetchall())


# --- Ported from LangGraph's store tests ---------------------------------------------------------


def test_batch_order(store):
    store.put((*U, "foo"), "key1", {"data": "value1"})
    store.put((*U, "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(namespace=(*U, "foo"), key="key1"),
            PutOp(namespace=(*U, "bar"), key="key2", value={"data": "value2"}),
            SearchOp(namespace_prefix=U, filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(namespace=U, key="key3"),
        ]
    )
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"} and results[0].key == "key1"
    assert results[1] is None
    assert [item.key for item in results[2]] == ["key1"]
    assert sorted(results[3]) == [(*U, "bar"), (*U, "foo")]
    assert results[4] is None

    reordered = store.batch(
        [
            SearchOp(namespace_prefix=U, filter=None, limit=5, offset=0),
            GetOp(namespace=(*U, "bar"), key="key2"),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
            PutOp(namespace=U, key="key3", value={"data": "value3"}),
            GetOp(namespace=(*U, "foo"), key="key1"),
        ]
    )
    assert len(reordered[0]) == 2  # the put of key3 comes after the batch's reads
    assert reordered[1].value == {"data": "value2"}
    assert reordered[3] is None
    assert reordered[4].value == {"data": "value1"}
    assert store.get(U, "key3").value == {"data": "value3"}


def test_batch_get_put_and_delete_ops(store):
    assert store.batch(
        [
            PutOp(namespace=U, key="key1", value={"data": "value1"}),
            PutOp(namespace=U, key="key2", value={"data": "value2"}),
            PutOp(namespace=U, key="key3", value=None),  # a delete of nothing
        ]
    ) == [None, None, None]
    got = store.batch([GetOp(namespace=U, key="key1"), GetOp(namespace=U, key="key2"), GetOp(namespace=U, key="key3")])
    assert [item and item.value for item in got] == [{"data": "value1"}, {"data": "value2"}, None]
    assert store.batch([]) == []


def test_batch_search_ops(store):
    for namespace, key, value in [
        ((*U, "foo"), "key1", {"data": "value1", "tag": "a"}),
        ((*U, "bar"), "key2", {"data": "value2", "tag": "a"}),
        ((*U, "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        store.put(namespace, key, value)
    tagged, first_two, foo = store.batch(
        [
            SearchOp(namespace_prefix=U, filter={"tag": "a"}, limit=10, offset=0),
            SearchOp(namespace_prefix=U, filter=None, limit=2, offset=0),
            SearchOp(namespace_prefix=(*U, "foo"), filter=None, limit=10, offset=0),
        ]
    )
    assert sorted(item.key for item in tagged) == ["key1", "key2"]
    assert [item.key for item in first_two] == ["key3", "key2"]  # the most recently updated first
    assert [(item.namespace, item.score) for item in foo] == [((*U, "foo"), None)]


def test_basic_store_ops(store):
    namespace = (*U, "documents")
    store.put(namespace, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(namespace, "doc1")
    assert (item.namespace, item.key, item.value) == (
        namespace,
        "doc1",
        {"title": "Test Document", "content": "Hello, World!"},
    )

    store.put(namespace, "doc1", {"title": "Updated Document"})
    updated = store.get(namespace, "doc1")
    assert updated.value == {"title": "Updated Document"}
    assert updated.updated_at > item.updated_at and updated.created_at == item.created_at
    assert store.get((*U, "other_documents"), "doc1") is None

    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None


def test_list_namespaces(store):
    namespaces = [
        (*U, "test", "documents", "public"),
        (*U, "test", "documents", "private"),
        (*U, "test", "images", "public"),
        (*U, "test", "images", "private"),
        (*U, "prod", "documents", "public"),
        (*U, "prod", "documents", "private"),
    ]
    for namespace in namespaces:
        store.put(namespace, "dummy", {"content": "dummy"})
    assert store.list_namespaces() == sorted(namespaces)
    assert store.list_namespaces(prefix=[*U, "test"]) == sorted(namespaces[:4])
    assert store.list_namespaces(suffix=["public"]) == sorted(ns for ns in namespaces if ns[-1] == "public")
    assert store.list_namespaces(prefix=[*U, "*", "documents"]) == sorted(
        ns for ns in namespaces if ns[3] == "documents"
    )
    assert store.list_namespaces(suffix=["documents", "*"]) == sorted(ns for ns in namespaces if ns[3] == "documents")
    assert store.list_namespaces(max_depth=3) == [(*U, "prod"), (*U, "test")]
    assert store.list_namespaces(prefix=[*U, "test"], max_depth=4) == [
        (*U, "test", "documents"),
        (*U, "test", "images"),
    ]
    assert store.list_namespaces(limit=3) == sorted(namespaces)[:3]
    assert store.list_namespaces(limit=3, offset=3) == sorted(namespaces)[3:6]
    assert store.list_namespaces(prefix=["Users"]) == []  # labels compare exactly, on SQLite too
    for namespace in namespaces:
        store.delete(namespace, "dummy")
    assert store.list_namespaces() == []


def test_search(store):
    for namespace, key, value in [
        ((*U, "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
        ((*U, "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        ((*U, "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]:
        store.put(namespace, key, value)
    assert len(store.search(U)) == 3
    assert {item.key for item in store.search((*U, "docs"))} == {"doc1", "doc2"}
    assert {item.key for item in store.search(U, filter={"author": "Alice"})} == {"doc1", "img1"}
    assert {item.key for item in store.search(U, filter={"tags": ["draft"]})} == {"doc2"}
    assert {item.key for item in store.search(U, filter={"author": {"$ne": "Alice"}})} == {"doc2"}
    assert len(store.search(U, limit=2)) == 2
    assert len(store.search(U, offset=2)) == 1
    assert store.search(U, filter={"author": "Alice"}, limit=0) == []
    assert [item.key for item in store.search(U, filter={"author": "Alice"}, limit=1, offset=1)] == ["doc1"]
    assert store.search((*U, "doc")) == []  # a prefix is whole labels, not characters
    # query: the items holding any of its words, best first with a score; the filter still applies.
    assert store.search(U, query="anything") == []
    ranked = store.search(U, query="first DOC image")
    assert [item.key for item in ranked] == ["doc1", "img1", "doc2"]
    assert ranked[0].score > ranked[1].score > ranked[2].score >= 1
    assert [item.key for item in store.search(U, query="doc", filter={"author": "Bob"})] == ["doc2"]
    assert [item.key for item in store.search(U, query="doc", limit=1, offset=1)] == ["doc1"]
    assert store.search(U, query="  ")[0].score is None  # no word: a search without a query


def test_numeric_comparison_filters(store):
    namespace = (*U, "scores")
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11)]:
        store.put(namespace, key, {"score": score})

    def scores(filter: dict) -> list:
        return sorted(item.value["score"] for item in store.search(namespace, filter=filter))

    assert scores({"score": {"$gte": 10}}) == [10, 11]  # numbers, not text ("9" >= "10")
    assert scores({"score": {"$gt": 9}}) == [10, 11]
    assert scores({"score": {"$lt": 10}}) == [2, 9]
    assert scores({"score": {"$lte": 9}}) == [2, 9]
    assert scores({"score": {"$gt": 2, "$lt": 11}}) == [9, 10]
    store.put(namespace, "e", {"score": 9.5})
    assert scores({"score": {"$gt": 9}}) == [9.5, 10, 11]
    for key, name in [("f", "apple"), ("g", "banana")]:
        store.put(namespace, key, {"score": name})
    assert scores({"score": {"$gt": "apple"}}) == ["banana"]  # strings compare as strings
    store.put(namespace, "h", {"score": 10**400})  # JSON numbers of any size compare exactly
    assert scores({"score": {"$gt": 1e308}}) == [10**400]


def test_namespace_labels_are_checked_before_any_request(store):
    for bad in [(*U, "a.b"), (*U, ""), (*U, "nul\x00")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"v": 1})
        with pytest.raises(InvalidNamespaceError):
            store.batch([GetOp(bad, "k")])
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "u1"), "k", {"v": 1})


def test_async_methods(store):
    async def scenario():
        await store.aput((*U, "a"), "k", {"v": 1})
        await store.abatch([PutOp((*U, "b"), "k", {"v": 2})])
        assert (await store.aget((*U, "a"), "k")).value == {"v": 1}
        assert {item.value["v"] for item in await store.asearch(U, filter={"v": {"$gte": 1}})} == {1, 2}
        assert await store.alist_namespaces(prefix=list(U)) == [(*U, "a"), (*U, "b")]
        await store.adelete((*U, "a"), "k")
        assert await store.aget((*U, "a"), "k") is None
        await store.aclose()

    asyncio.run(scenario())


# --- Attribution, tenancy, bad input --------------------------------------------------------------


def test_an_item_that_names_no_person_is_refused_and_nothing_of_its_batch_is_stored(store):
    for namespace in [("docs",), ("users",), ("docs", "u1"), ("Users", "u1")]:
        with pytest.raises(ValidationError, match='must start with "users" and the user id'):
            store.batch([PutOp(U, "fine", {"v": 1}), PutOp(namespace, "k", {"v": 1})])
    assert MemoryItem.objects.count() == 0
    with pytest.raises(ValidationError, match="must not contain '/'"):
        store.put(("users", "a/b"), "k", {"v": 1})
    store.delete(("docs",), "k")  # a delete anywhere finds nothing to remove: no error
    store.put(user_namespace("u1", "prefs"), "k", {"v": 1})
    assert raw_rows("u1") == [("users.u1.prefs", "k")]


def test_a_tenant_reads_only_its_own_items(store, live_server, other_tenant):
    from agentstate.tenancy.models import APIKey

    store.put(U, "k", {"v": 1})
    other_key = APIKey.objects.create_key(name="other", tenant=other_tenant, scope="agent")[1]
    with AgentStateStore(live_server.url, other_key) as other:
        assert other.get(U, "k") is None and other.search(()) == [] and other.list_namespaces() == []
        other.put(U, "k", {"v": 2})  # the same namespace in another tenant: another item
    assert store.get(U, "k").value == {"v": 1}


BAD_OPS = [
    ("nope", "ops"),
    ([{"op": "fetch"}], "ops[0].op"),
    ([{"op": "get", "namespace": "users.u1", "key": "k"}], "ops[0].namespace"),
    ([{"op": "get", "namespace": ["users", "a.b"], "key": "k"}], "ops[0].namespace"),
    ([{"op": "get", "namespace": ["users", "u1"], "key": 7}], "ops[0].key"),
    ([{"op": "get", "namespace": ["users", "u1"], "key": "k", "colour": 1}], "ops[0].colour"),
    ([{"op": "put", "namespace": ["users", "u1"], "key": "k", "value": [1]}], "ops[0].value"),
    ([{"op": "put", "namespace": ["users", "u1"], "key": "k", "value": {"a": "\u0000"}}], "ops[0].value"),
    ([{"op": "put", "namespace": ["users", "u1"], "key": "k", "value": {}, "ttl": -1}], "ops[0].ttl"),
    ([{"op": "put", "namespace": ["users", "u1"], "key": "k", "value": {}, "ttl": "1"}], "ops[0].ttl"),
    ([{"op": "put", "namespace": ["users", "u1"], "key": "k" * 513, "value": {}}], "ops[0].key"),
    ([{"op": "search", "namespace_prefix": [], "limit": 1001}], "ops[0].limit"),
    ([{"op": "search", "namespace_prefix": [], "offset": -1}], "ops[0].offset"),
    ([{"op": "search", "namespace_prefix": [], "filter": {"a": {"$regex": "x"}}}], "ops[0].filter"),
    ([{"op": "search", "namespace_prefix": [], "filter": {"a": {"$gt": [1]}}}], "ops[0].filter"),
    ([{"op": "search", "namespace_prefix": [], "filter": [1]}], "ops[0].filter"),
    ([{"op": "search", "namespace_prefix": [], "filter": {"a": {"$eq": 1, "b": 2}}}], "ops[0].filter"),
    ([{"op": "search", "namespace_prefix": [], "filter": {"a": {"b": {"$in": [1]}}}}], "ops[0].filter"),
    ([{"op": "list_namespaces", "max_depth": 0}], "ops[0].max_depth"),
    ([{"op": "list_namespaces", "prefix": "users"}], "ops[0].prefix"),
]


def _operation(case) -> str:
    ops = case[0]
    return ops[0]["op"] if isinstance(ops, list) else ""


# The quick loop sends the first bad call of each kind of operation; the slow set every one.
@pytest.mark.parametrize(
    "ops, field",
    first_of_each_kind(BAD_OPS, [f"{n}-{field}" for n, (_, field) in enumerate(BAD_OPS)], _operation),
)
def test_bad_input_is_a_400_naming_the_field(live_server, store_key, ops, field):
    import httpx

    response = httpx.post(
        f"{live_server.url}/api/v1/store/batch/", json={"ops": ops}, headers={"Authorization": f"Api-Key {store_key}"}
    )
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]["fields"], response.json()
    assert MemoryItem.objects.count() == 0


# --- TTL ----------------------------------------------------------------------------------------


def test_ttl_expires_items_refreshes_them_on_read_and_the_sweep_removes_them(store, live_server, store_key):
    store.put((*U, "t"), "short", {"v": 1}, ttl=1)
    store.put((*U, "t"), "forever", {"v": 2})
    row = MemoryItem.objects.get(key="short")
    assert timedelta(seconds=50) < row.expires_at - timezone.now() <= timedelta(minutes=1)
    assert MemoryItem.objects.get(key="forever").expires_at is None

    soon = timezone.now() + timedelta(seconds=5)
    MemoryItem.objects.filter(key="short").update(expires_at=soon)
    store.get((*U, "t"), "short", refresh_ttl=False)
    assert MemoryItem.objects.get(key="short").expires_at == soon
    store.get((*U, "t"), "short")  # refreshed by default
    assert MemoryItem.objects.get(key="short").expires_at - timezone.now() > timedelta(seconds=50)
    MemoryItem.objects.filter(key="short").update(expires_at=soon)
    store.search((*U, "t"))
    assert MemoryItem.objects.get(key="short").expires_at - timezone.now() > timedelta(seconds=50)

    with AgentStateStore(live_server.url, store_key, ttl={"refresh_on_read": False, "default_ttl": 2}) as no_refresh:
        no_refresh.put((*U, "t"), "default", {"v": 3})
        assert MemoryItem.objects.get(key="default").ttl_minutes == 2
        MemoryItem.objects.filter(key="short").update(expires_at=soon)
        no_refresh.get((*U, "t"), "short")
        assert MemoryItem.objects.get(key="short").expires_at == soon

    MemoryItem.objects.filter(key="short").update(expires_at=timezone.now() - timedelta(seconds=1))
    assert store.get((*U, "t"), "short") is None
    assert [item.key for item in store.search((*U, "t"))] == ["default", "forever"]
    store.put((*U, "gone"), "k", {"v": 4}, ttl=1)
    MemoryItem.objects.filter(key="k").update(expires_at=timezone.now() - timedelta(seconds=1))
    assert (*U, "gone") not in store.list_namespaces()

    out = io.StringIO()
    call_command("expire_memories", "--batch-size", "1", stdout=out)  # one item per transaction
    assert out.getvalue() == "Deleted 2 expired memory items.\n"
    assert sorted(key for _, key in raw_rows("u1")) == ["default", "forever"]


# --- A graph, driven by LangGraph's runner ---------------------------------------------------------


class Chat(TypedDict):
    user_id: str
    text: str
    reply: str


def remember(state: Chat, runtime: Runtime) -> dict:
    """Keeps what the user said under their namespace and answers with everything kept so far."""
    namespace = user_namespace(state["user_id"], "facts")
    known = runtime.store.search(namespace, limit=100)
    runtime.store.put(namespace, f"fact-{len(known)}", {"text": state["text"]})
    return {"reply": " / ".join(sorted(item.value["text"] for item in known))}


def test_a_graph_compiled_with_the_store_reads_and_writes_it_across_runs(store):
    builder = StateGraph(Chat)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    graph = builder.compile(store=store)

    graph.invoke({"user_id": "alice", "text": "likes tea", "reply": ""})
    second = graph.invoke({"user_id": "alice", "text": "lives in Lyon", "reply": ""})
    assert second["reply"] == "likes tea"
    third = asyncio.run(graph.ainvoke({"user_id": "alice", "text": "x", "reply": ""}))
    assert third["reply"] == "likes tea / lives in Lyon"
    assert graph.invoke({"user_id": "bob", "text": "hi", "reply": ""})["reply"] == ""
    assert [key for _, key in raw_rows("alice")] == ["fact-0", "fact-1", "fact-2"]


# --- The person's rights ----------------------------------------------------------------------------


@pytest.fixture
def hmac_keys(settings):
    settings.ERASURE_HMAC_KEYS = {"k1": "secret"}
    settings.ERASURE_HMAC_KEY_ID = "k1"


@pytest.mark.parametrize("scope", [ErasureRequest.Scope.USER_DATA, ErasureRequest.Scope.EVERYTHING])
def test_erasing_a_person_removes_their_items_and_only_theirs(store, tenant, hmac_keys, scope):
    alice = "alice.smith%40@example.com"  # "." and "%": written "%2E" and "%25" in the namespace
    assert user_namespace(alice)[1] == "alice%2Esmith%2540@example%2Ecom"
    store.put(user_namespace(alice, "facts"), "tea", {"likes": "tea"}, ttl=60)
    store.put(user_namespace(alice, "facts", "deep"), "city", {"lives": "Lyon"})
    store.put(user_namespace("bob", "facts"), "tea", {"likes": "coffee"})
    assert [item.key for item in store.search(user_namespace(alice))] == ["city", "tea"]
    export = subject_export(subjects=[(tenant, alice)])
    assert sorted(item["key"] for item in export["subjects"][0]["memories"]) == ["city", "tea"]

    request = ErasureRequest.objects.create(scope=scope, due_on="2099-01-01")
    ErasureSubject.objects.create(request=request, tenant=tenant, user_id=alice)
    ErasureRequest.objects.filter(pk=request.pk).update(status=ErasureRequest.Status.VERIFIED)
    assert erasure_execute(request=request).counts["memories"] == 2

    assert raw_rows(alice) == []
    assert raw_rows("bob") == [("users.bob.facts", "tea")]
    assert store.search(user_namespace(alice)) == []


# --- The admin -----------------------------------------------------------------------------------


def test_staff_browse_items_and_their_str_names_no_one(store, admin_client):
    from django.urls import reverse

    store.put(user_namespace("alice", "facts"), "food", {"likes": "tea"})
    item = MemoryItem.objects.get()
    assert "alice" not in str(item) and "food" not in str(item)  # the admin log keeps it
    listed = admin_client.get(reverse("admin:userdata_app_memoryitem_changelist") + "?user_id=alice")
    assert listed.status_code == 200 and listed.context["cl"].result_count == 1
    page = admin_client.get(reverse("admin:userdata_app_memoryitem_change", args=[item.pk])).content.decode()
    assert "users.alice.facts" in page and "tea" in page
