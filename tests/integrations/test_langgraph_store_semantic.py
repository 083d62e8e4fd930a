"""AgentStateStore with an index (LangGraph's ``IndexConfig``): the client embeds, the server keeps
the vectors and ranks by cosine similarity as ``InMemoryStore`` does; a client without an index
gets the word search it always had."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from agentstate.integrations.langgraph_store import AgentStateStore
from userdata_app.memory.models import MemoryItem, MemoryVector

U = ("users", "u1")
WORDS = ("tea", "coffee", "lyon", "paris", "cat", "dog", "rain", "sun")
DIMS = 16


def embed(texts: list[str]) -> list[list[float]]:
    """Deterministic: a text's vector is the sum of its words' hashed vectors (0 for no word)."""
    out = []
    for text in texts:
        vector = [0.0] * DIMS
        for word in text.split():
            digest = hashlib.sha256(word.encode()).digest()
            for i in range(DIMS):
                vector[i] += digest[i] / 255 - 0.5
        out.append(vector)
    return out


INDEX = {"dims": DIMS, "embed": embed, "fields": ["text", "tags[*]"]}


@pytest.fixture
def store_key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="semantic", tenant=tenant, scope="agent")[1]


@pytest.fixture
def server(live_server):
    """A store maker against the live server (a WSGI transport in the test's thread would share, and
    close, the test's connection: PostgreSQL's tests need the server's own)."""
    return lambda key, **options: AgentStateStore(live_server.url, key, **options)


def ranked(items) -> list[tuple[str, float | None]]:
    return [(item.key, item.score) for item in items]


def assert_same_ranking(ours, theirs) -> None:
    """Same scores in the same order (float32 storage: within 1e-5); each key with its own score;
    ties, and the unscored tail, may go in another order (a documented tie order)."""
    assert len(ours) == len(theirs)
    theirs_by_key = dict(theirs)
    for (key, score), (_, their_score) in zip(ours, theirs, strict=True):
        if their_score is None:
            assert score is None
        else:
            assert score == pytest.approx(their_score, abs=1e-5)
        expected = theirs_by_key[key]
        assert (score is None) == (expected is None)
        if score is not None:
            assert score == pytest.approx(expected, abs=1e-5)


values = st.fixed_dictionaries(
    # Texts of one item differ (InMemoryStore fails on a put embedding one text twice): a text of
    # two or three words, tags of one each.
    {"text": st.lists(st.sampled_from(WORDS), min_size=2, max_size=3, unique=True).map(" ".join)},
    optional={"tags": st.lists(st.sampled_from(WORDS), max_size=3, unique=True), "kind": st.sampled_from("ab")},
)
puts = st.lists(
    st.tuples(st.sampled_from([(*U, "facts"), (*U, "other")]), values, st.sampled_from([None, False, ["tags[*]"]])),
    min_size=1,
    max_size=8,
)


def check_same_ranking_as_in_memory(server, store_key, entries, query, kind) -> None:
    MemoryItem.objects.all().delete()  # each example starts empty (its vectors go with the items)
    theirs = InMemoryStore(index=INDEX)
    with server(store_key, index=INDEX) as ours:
        for i, (namespace, value, index) in enumerate(entries):
            for store in (ours, theirs):
                store.put(namespace, f"k{i}", value, index=index)
        query_filter = {"kind": kind} if kind else None
        for prefix in (U, (*U, "facts")):
            found = ours.search(prefix, query=query, filter=query_filter, limit=100)
            expected = theirs.search(prefix, query=query, filter=query_filter, limit=100)
            assert_same_ranking(ranked(found), ranked(expected))
            full = ranked(found)
            pages = [
                ranked(ours.search(prefix, query=query, filter=query_filter, limit=3, offset=o)) for o in (0, 3, 6)
            ]
            assert [key for page in pages for key, _ in page] == [key for key, _ in full[:9]]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=puts, query=st.sampled_from(WORDS), kind=st.sampled_from([None, "a"]))
def test_same_ranking_as_in_memory_store(server, store_key, entries, query, kind):
    check_same_ranking_as_in_memory(server, store_key, entries, query, kind)


@pytest.mark.slow
@pytest.mark.crosscheck
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=puts, query=st.sampled_from(WORDS), kind=st.sampled_from([None, "a"]))
def test_same_ranking_as_in_memory_store_many(server, store_key, entries, query, kind):
    check_same_ranking_as_in_memory(server, store_key, entries, query, kind)


def test_best_vector_scores_the_item_and_unindexed_items_come_last(server, store_key):
    with server(store_key, index=INDEX) as store:
        store.put(U, "many", {"text": "rain", "tags": ["dog", "tea"]})
        store.put(U, "plain", {"text": "tea"}, index=False)
        store.put(U, "sun", {"text": "sun"})
        found = store.search(U, query="tea")
    assert [item.key for item in found] == ["many", "sun", "plain"]
    assert found[0].score == pytest.approx(1.0, abs=1e-6)  # its "tags[*].1" vector is the query's
    assert found[2].score is None
    assert set(MemoryVector.objects.values_list("path", flat=True)) == {"text", "tags[*].0", "tags[*].1"}


def test_a_client_without_an_index_keeps_the_word_search(server, store_key):
    with server(store_key, index=INDEX) as indexed, server(store_key) as plain:
        indexed.put(U, "a", {"text": "tea lyon"})
        indexed.put(U, "b", {"text": "coffee"})
        words = plain.search(U, query="tea")  # no vector sent: words, the items holding none left out
        assert [item.key for item in words] == ["a"]
        assert words[0].score is not None
        plain.put(U, "b", {"text": "coffee paris"})  # a put without vectors: the item keeps none
        found = indexed.search(U, query="coffee")
    assert [(item.key, item.score is None) for item in found] == [("a", False), ("b", True)]


def test_bad_vectors_are_refused_with_a_400(client, store_key):
    headers = {"HTTP_AUTHORIZATION": f"Api-Key {store_key}"}
    put = {"op": "put", "namespace": list(U), "key": "k", "value": {"text": "x"}}
    for vectors in (
        [{"path": "text", "vector": [1e39]}],  # beyond float32
        [{"path": "text", "vector": ["1"]}],
        [{"path": "text"}],
        "x",
        [{"path": "", "vector": [1]}],
    ):
        answer = client.post(
            "/api/v1/store/batch/", {"ops": [{**put, "vectors": vectors}]}, content_type="application/json", **headers
        )
        assert answer.status_code == 400, vectors
        assert "ops[0].vectors" in str(answer.json())
    search = {"op": "search", "namespace_prefix": list(U), "vector": [1, 2]}
    answer = client.post("/api/v1/store/batch/", {"ops": [search]}, content_type="application/json", **headers)
    assert answer.status_code == 400


CONCEPTS = {"dog": 0, "cat": 0, "pet": 0, "tea": 1, "coffee": 1, "drink": 1, "lyon": 2, "paris": 2, "city": 2}


async def concept_embed(texts: list[str]) -> list[list[float]]:
    """An async embedder of meaning: words of one concept point the same way."""
    out = []
    for text in texts:
        vector = [0.0, 0.0, 0.0, 0.01]
        for word in text.lower().replace(".", " ").split():
            if word in CONCEPTS:
                vector[CONCEPTS[word]] += 1
        out.append(vector)
    return out


def test_a_search_comparing_more_vectors_than_the_bound_is_refused_with_a_400(client, store_key, settings):
    """Read from the database at every search, such a search would take minutes (a tenant's
    1,000,000): the caller is told to search within a person, and nothing is read."""
    headers = {"HTTP_AUTHORIZATION": f"Api-Key {store_key}"}
    puts = [
        {
            "op": "put",
            "namespace": ["users", user, "notes"],
            "key": "k",
            "value": {"text": "x"},
            "vectors": [{"path": "text", "vector": [1.0] * DIMS}],
        }
        for user in ("u1", "u2")
    ]
    client.post("/api/v1/store/batch/", {"ops": puts}, content_type="application/json", **headers)
    settings.MEMORY_VECTOR_CACHE_MB = DIMS * 4 * 1.5 / 1024 / 1024  # one vector's bytes, not two
    search = {"op": "search", "namespace_prefix": ["users"], "query": "x", "vector": [1.0] * DIMS}
    answer = client.post("/api/v1/store/batch/", {"ops": [search]}, content_type="application/json", **headers)
    assert answer.status_code == 400
    assert "person's namespace" in str(answer.json()["error"]["fields"]["namespace_prefix"])
    search["namespace_prefix"] = ["users", "u1"]
    answer = client.post("/api/v1/store/batch/", {"ops": [search]}, content_type="application/json", **headers)
    assert [item["key"] for item in answer.json()["results"][0]] == ["k"]


def test_adk_memory_with_an_embedder_ranks_by_meaning(live_server, transactional_db, tenant):
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session
    from google.genai import types

    from agentstate.integrations.adk_memory import AgentStateMemoryService
    from agentstate.tenancy.models import APIKey

    key = APIKey.objects.create_key(name="adk", tenant=tenant, scope="agent")[1]

    def said(text: str) -> Event:
        return Event(author="user", content=types.Content(role="user", parts=[types.Part(text=text)]))

    events = [said("I live in Lyon."), said("I have a dog."), said("I drink coffee.")]
    session = Session(id="s1", app_name="app", user_id="alice", events=events)

    async def scenario() -> tuple[list[str], list[str]]:
        by_meaning = AgentStateMemoryService(live_server.url, key, embed=concept_embed)
        by_words = AgentStateMemoryService(live_server.url, key)
        await by_meaning.add_session_to_memory(session)
        found = await by_meaning.search_memory(app_name="app", user_id="alice", query="which pet")
        words = await by_words.search_memory(app_name="app", user_id="alice", query="which pet")
        await by_meaning.close()
        await by_words.close()
        return [m.content.parts[0].text for m in found.memories], [m.content.parts[0].text for m in words.memories]

    meaning, words = asyncio.run(scenario())
    assert meaning[0] == "I have a dog."  # no word shared with the query
    assert len(meaning) == 3
    assert words == []


def test_vectors_are_exported_and_erased_with_their_person(server, store_key, tenant, settings):
    from userdata_app.erasure import erasure_execute
    from userdata_app.models import ErasureRequest, ErasureSubject
    from userdata_app.selectors import subject_export

    settings.ERASURE_HMAC_KEYS, settings.ERASURE_HMAC_KEY_ID = {"k1": "secret"}, "k1"
    with server(store_key, index=INDEX) as store:
        store.put(("users", "alice"), "tea", {"text": "tea lyon"})
        store.put(("users", "bob"), "tea", {"text": "coffee paris"})
    [record] = subject_export(subjects=[(tenant, "alice")])["subjects"][0]["memories"]
    assert record["vectors"]["text"] == pytest.approx(embed(["tea lyon"])[0], abs=1e-6)

    request = ErasureRequest.objects.create(scope=ErasureRequest.Scope.USER_DATA, due_on="2099-01-01")
    ErasureSubject.objects.create(request=request, tenant=tenant, user_id="alice")
    ErasureRequest.objects.filter(pk=request.pk).update(status=ErasureRequest.Status.VERIFIED)
    erasure_execute(request=request)
    assert list(MemoryVector.objects.values_list("item__user_id", flat=True)) == ["bob"]
