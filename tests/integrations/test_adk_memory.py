"""AgentStateMemoryService against a live server: ADK's own Runner with its load_memory and
preload_memory tools and a scripted model, a differential test against ADK's InMemoryMemoryService
on random sequences, forgetting that lasts, and the person's rights (erasure, export, counts, TTL)
over the raw table."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx
import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.session import Session
from google.adk.tools.load_memory_tool import load_memory_tool
from google.adk.tools.preload_memory_tool import preload_memory_tool
from google.genai import types
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentstate.client import ValidationError
from agentstate.integrations.adk import AgentStateSessionService
from agentstate.integrations.adk_memory import AgentStateMemoryService, memory_namespace
from agentstate.subject_data import subject_counts
from agentstate.subjects import USER_DATA
from tests.client.keys import api_key_new
from userdata_app.erasure import erasure_execute
from userdata_app.memory.models import MemoryItem
from userdata_app.models import ErasureRequest, ErasureSubject
from userdata_app.selectors import subject_export

APP = "notes_app"


@pytest.fixture
def memory_key(transactional_db, tenant) -> str:
    return api_key_new(tenant)


@pytest.fixture
def memory(live_server, memory_key):
    return AgentStateMemoryService(live_server.url, memory_key)


def run(coroutine):
    return asyncio.run(coroutine)


def raw_rows(user_id: str) -> list[tuple[str, str, str]]:
    """The table's rows of a person, read with SQL (not through the model's manager)."""
    with connection.cursor() as cursor:
        table, key = MemoryItem._meta.db_table, connection.ops.quote_name("key")
        sql = f"SELECT namespace, {key}, value FROM {table} WHERE user_id = %s ORDER BY 1, 2"  # noqa: S608 (names from the model)
        cursor.execute(sql, [user_id])
        return list(cursor.fetchall())


def said(author: str, text: str, **fields) -> Event:
    role = "user" if author == "user" else "model"
    return Event(author=author, content=types.Content(role=role, parts=[types.Part(text=text)]), **fields)


def session_of(user_id: str, session_id: str, events: list[Event], app_name: str = APP) -> Session:
    return Session(id=session_id, app_name=app_name, user_id=user_id, events=events)


def texts(response) -> list[str]:
    return [entry.content.parts[0].text for entry in response.memories]


# --- ADK's Runner, its memory tools, a scripted model ---------------------------------------------


class MemoryModel(BaseLlm):
    """Calls load_memory with the user's words when it has the tool, then answers with what it
    found; with preload_memory, answers with the past conversations ADK put in its request."""

    model: str = "scripted-memory"

    async def generate_content_async(self, llm_request, stream=False):
        last = llm_request.contents[-1].parts[0]
        if last.function_response is not None:
            found = last.function_response.response["result"].memories  # the tool's LoadMemoryResponse
            text = " | ".join(m.content.parts[0].text for m in found) or "I do not remember."
        elif "load_memory" in llm_request.tools_dict:
            call = types.FunctionCall(name="load_memory", args={"query": last.text})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
            return
        else:
            past = [
                part.text
                for content in llm_request.contents
                for part in content.parts
                if part.text and "<PAST_CONVERSATIONS>" in part.text
            ]
            text = past[0].split("<PAST_CONVERSATIONS>\n")[1].split("\n</PAST_CONVERSATIONS>")[0] if past else "None."
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


async def turn(runner: Runner, sessions, user_id: str, text: str) -> str:
    session = await sessions.create_session(app_name=APP, user_id=user_id)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    answers = [
        event.content.parts[0].text
        async for event in runner.run_async(user_id=user_id, session_id=session.id, new_message=message)
        if event.is_final_response() and event.content and event.content.parts
    ]
    return answers[-1]


@pytest.mark.asyncio
async def test_an_agent_recalls_a_past_session_with_load_memory_and_preload_memory(live_server, memory_key):
    sessions = AgentStateSessionService(live_server.url, memory_key)
    memory = AgentStateMemoryService(live_server.url, memory_key)

    def runner(*tools) -> Runner:
        agent = LlmAgent(name="notes_agent", model=MemoryModel(), instruction="Remember.", tools=list(tools))
        return Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=memory)

    first = await sessions.create_session(app_name=APP, user_id="ada")
    message = types.Content(role="user", parts=[types.Part(text="My favourite colour is teal")])
    async for _ in runner().run_async(user_id="ada", session_id=first.id, new_message=message):
        pass
    await memory.add_session_to_memory(await sessions.get_session(app_name=APP, user_id="ada", session_id=first.id))

    # The model asks its memory (the load_memory tool) and answers with what comes back.
    recalled = await turn(runner(load_memory_tool), sessions, "ada", "which colour")
    assert recalled == "My favourite colour is teal"
    # preload_memory searches with the user's message before the model runs.
    preloaded = await turn(runner(preload_memory_tool), sessions, "ada", "colour?")
    assert preloaded.endswith("user: My favourite colour is teal")
    # Another user remembers nothing of Ada's.
    assert await turn(runner(load_memory_tool), sessions, "bob", "which colour") == "I do not remember."

    # Forgotten: the memory goes, and adding its session again does not bring it back.
    [entry] = (await memory.search_memory(app_name=APP, user_id="ada", query="teal")).memories
    await memory.delete_memory(app_name=APP, user_id="ada", memory_id=entry.id)
    await memory.add_session_to_memory(await sessions.get_session(app_name=APP, user_id="ada", session_id=first.id))
    assert await turn(runner(preload_memory_tool), sessions, "ada", "colour?") == "None."
    await memory.close()
    await sessions.close()


# --- The service's own behaviour ------------------------------------------------------------------


def test_events_are_remembered_once_and_only_with_text(memory):
    question, answer = said("user", "Where is the Louvre?"), said("agent", "In Paris.")
    tool_call = Event(
        author="agent",
        content=types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(name="f", args={}))]),
    )
    session = session_of("ada", "s1", [question, tool_call, answer, Event(author="user")])
    run(memory.add_session_to_memory(session))
    run(memory.add_session_to_memory(session))  # a session may be added many times
    assert sorted(key for _, key, _ in raw_rows("ada")) == sorted([question.id, answer.id])
    found = run(memory.search_memory(app_name=APP, user_id="ada", query="PARIS, louvre!")).memories
    assert {entry.id for entry in found} == {question.id, answer.id}
    assert {entry.author for entry in found} == {"user", "agent"}
    assert run(memory.search_memory(app_name=APP, user_id="ada", query="?!")).memories == []
    assert run(memory.search_memory(app_name="other_app", user_id="ada", query="paris")).memories == []


def test_add_memory_stores_entries_and_search_returns_them_newest_first(memory):
    first = MemoryEntry(
        content=types.Content(role="user", parts=[types.Part(text="allergic to peanuts")]),
        author="user",
        timestamp="2026-01-02T03:04:05",
        custom_metadata={"source": "intake form"},
    )
    run(memory.add_memory(app_name=APP, user_id="ada", memories=[first]))
    run(memory.add_memory(app_name=APP, user_id="ada", memories=[first.model_copy(update={"id": "diet"})]))
    found = run(memory.search_memory(app_name=APP, user_id="ada", query="peanuts")).memories
    assert found[0].id == "diet"
    assert found[1].id and found[1].id != "diet"  # an entry without an id gets one
    assert found[0].model_dump(exclude={"id"}) == first.model_dump(exclude={"id"})
    # An explicit write replaces the entry of its id, and brings a forgotten one back.
    run(memory.delete_memory(app_name=APP, user_id="ada", memory_id="diet"))
    assert [entry.id for entry in run(memory.search_memory(app_name=APP, user_id="ada", query="peanuts")).memories] == [
        found[1].id
    ]
    run(memory.add_memory(app_name=APP, user_id="ada", memories=[first.model_copy(update={"id": "diet"})]))
    assert len(run(memory.search_memory(app_name=APP, user_id="ada", query="peanuts")).memories) == 2


def test_forgetting_keeps_no_content_and_lasts(memory):
    kept, forgotten = said("user", "I like tea"), said("user", "my PIN is secret tea")
    session = session_of("ada", "s1", [kept, forgotten])
    run(memory.add_session_to_memory(session))
    run(memory.delete_memory(app_name=APP, user_id="ada", memory_id=forgotten.id))
    run(memory.delete_memory(app_name=APP, user_id="ada", memory_id="never-remembered"))
    run(memory.delete_memory(app_name=APP, user_id="ada", memory_id=None))
    rows = {key: value for _, key, value in raw_rows("ada")}
    assert set(rows) == {kept.id, forgotten.id}  # nothing stored for an id never remembered
    assert "secret" not in str(rows[forgotten.id])  # the forgotten one's content is gone at once
    run(memory.add_session_to_memory(session))
    run(memory.add_events_to_memory(app_name=APP, user_id="ada", events=[forgotten], session_id="s2"))
    assert texts(run(memory.search_memory(app_name=APP, user_id="ada", query="tea"))) == ["I like tea"]


def test_ids_of_any_shape_stay_apart(memory):
    for user_id in ("ada.lovelace@example.com", "ada/lovelace", "100%", ""):
        run(memory.add_session_to_memory(session_of(user_id, "s", [said("user", f"note of {user_id!r}")], "app.v2")))
    for user_id in ("ada.lovelace@example.com", "ada/lovelace", "100%", ""):
        assert texts(run(memory.search_memory(app_name="app.v2", user_id=user_id, query="note"))) == [
            f"note of {user_id!r}"
        ]
    assert memory_namespace("app.v2", "ada.lovelace@example.com") == [
        "users",
        "ada%2Elovelace@example%2Ecom",
        "adk-memory",
        "app%2Ev2",
    ]


def test_search_returns_at_most_max_results(live_server, memory_key):
    memory = AgentStateMemoryService(live_server.url, memory_key, max_results=3)
    run(memory.add_events_to_memory(app_name=APP, user_id="ada", events=[said("user", f"tea {i}") for i in range(5)]))
    assert len(run(memory.search_memory(app_name=APP, user_id="ada", query="tea")).memories) == 3


def test_a_bad_ttl_is_refused_and_nothing_stored(memory):
    with pytest.raises(ValidationError):
        run(
            memory.add_events_to_memory(
                app_name=APP, user_id="ada", events=[said("user", "tea")], custom_metadata={"ttl_minutes": -1}
            )
        )
    assert raw_rows("ada") == []


def test_the_uri_and_the_key_from_the_environment_build_it(live_server, memory_key, monkeypatch):
    monkeypatch.setenv("AGENTSTATE_API_KEY", memory_key)
    memory = AgentStateMemoryService(uri=live_server.url.replace("http://", "agentstate://"), agents_dir="ignored")
    run(memory.add_events_to_memory(app_name=APP, user_id="ada", events=[said("user", "tea")]))
    assert texts(run(memory.search_memory(app_name=APP, user_id="ada", query="tea"))) == ["tea"]
    monkeypatch.delenv("AGENTSTATE_API_KEY")
    with pytest.raises(ValueError, match="API key"):
        AgentStateMemoryService(live_server.url)


# --- The store's conditional puts, as the endpoint takes them ----------------------------------------


@pytest.mark.parametrize(
    "op, field",
    [
        ({"only_if": "maybe", "value": {}}, "ops[0].only_if"),
        ({"only_if": "absent", "value": None}, "ops[0].only_if"),
    ],
)
def test_a_bad_condition_is_a_400_naming_the_field(live_server, memory_key, op, field):
    put = {"op": "put", "namespace": ["users", "ada"], "key": "k", **op}
    response = httpx.post(
        f"{live_server.url}/api/v1/store/batch/", json={"ops": [put]}, headers={"X-Api-Key": memory_key}
    )
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]["fields"]


@pytest.mark.parametrize(
    "ops, field",
    [
        ([{"op": "forget", "namespace": ["users", "ada"], "key": "k", "value": {}}], "ops[0].value"),
        ([{"op": "forget", "namespace": ["users", "ada"], "key": "k", "ttl": -1}], "ops[0].ttl"),
        ([{"op": "forget", "namespace": "users", "key": "k"}], "ops[0].namespace"),
        (  # a forget is a conditional write: alone with its item in a batch
            [
                {"op": "put", "namespace": ["users", "ada"], "key": "k", "value": {"n": 1}},
                {"op": "forget", "namespace": ["users", "ada"], "key": "k"},
            ],
            "ops",
        ),
    ],
)
def test_a_bad_forget_is_a_400_naming_the_field(live_server, memory_key, ops, field):
    url, key = f"{live_server.url}/api/v1/store/batch/", {"X-Api-Key": memory_key}
    response = httpx.post(url, json={"ops": ops}, headers=key)
    assert response.status_code == 400 and field in response.json()["error"]["fields"], response.text
    assert MemoryItem.objects.count() == 0


def test_a_conditional_put_cannot_share_its_batch_with_another_write_of_its_item(live_server, memory_key):
    put = {"op": "put", "namespace": ["users", "ada"], "key": "k", "value": {"n": 1}}
    ops = [put, {**put, "only_if": "absent"}]
    response = httpx.post(
        f"{live_server.url}/api/v1/store/batch/", json={"ops": ops}, headers={"X-Api-Key": memory_key}
    )
    assert response.status_code == 400 and "ops" in response.json()["error"]["fields"], response.text
    assert MemoryItem.objects.count() == 0


def test_an_expired_item_is_absent_to_a_conditional_put(memory):
    run(memory.add_events_to_memory(app_name=APP, user_id="ada", events=[said("user", "old tea")]))
    key = MemoryItem.objects.get().key
    MemoryItem.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    run(memory.delete_memory(app_name=APP, user_id="ada", memory_id=key))  # present only if live: nothing
    run(memory.add_events_to_memory(app_name=APP, user_id="ada", events=[said("user", "new tea", id=key)]))
    assert texts(run(memory.search_memory(app_name=APP, user_id="ada", query="tea"))) == ["new tea"]


# --- The person's rights: erasure, export, counts, TTL ---------------------------------------------


@pytest.fixture
def hmac_keys(settings):
    settings.ERASURE_HMAC_KEYS = {"k1": "secret"}
    settings.ERASURE_HMAC_KEY_ID = "k1"


def remember(memory, user_id: str, *notes: str) -> None:
    run(memory.add_session_to_memory(session_of(user_id, "s1", [said("user", note) for note in notes])))


@pytest.mark.parametrize("scope", [ErasureRequest.Scope.USER_DATA, ErasureRequest.Scope.EVERYTHING])
def test_erasing_a_person_removes_their_adk_memories_and_only_theirs(memory, tenant, hmac_keys, scope):
    alice = "alice.smith@example.com"
    remember(memory, alice, "alice likes tea", "alice lives in Lyon")
    remember(memory, "bob", "bob likes tea")
    run(memory.delete_memory(app_name=APP, user_id=alice, memory_id=raw_rows(alice)[0][1]))  # forgotten: still hers
    assert subject_counts(tenant=tenant, user_id=alice, kinds=[USER_DATA])["memories"] == 2

    request = ErasureRequest.objects.create(scope=scope, due_on="2099-01-01")
    ErasureSubject.objects.create(request=request, tenant=tenant, user_id=alice)
    ErasureRequest.objects.filter(pk=request.pk).update(status=ErasureRequest.Status.VERIFIED)
    assert erasure_execute(request=request).counts["memories"] == 2

    assert raw_rows(alice) == []
    assert [value for _, _, value in raw_rows("bob")] and "bob likes tea" in raw_rows("bob")[0][2]
    assert run(memory.search_memory(app_name=APP, user_id=alice, query="tea")).memories == []
    assert texts(run(memory.search_memory(app_name=APP, user_id="bob", query="tea"))) == ["bob likes tea"]


def test_a_persons_adk_memories_are_in_their_export(memory, tenant):
    remember(memory, "ada", "ada likes tea")
    remember(memory, "bob", "bob likes tea")
    [exported] = subject_export(subjects=[(tenant, "ada")])["subjects"][0]["memories"]
    assert exported["namespace"] == memory_namespace(APP, "ada")
    assert exported["value"]["text"] == "ada likes tea"
    assert exported["value"]["author"] == "user"


def test_a_memorys_ttl_expires_it_and_the_sweep_removes_it(live_server, memory_key):
    memory = AgentStateMemoryService(live_server.url, memory_key, ttl_minutes=60)
    remember(memory, "ada", "tea for an hour")
    run(
        memory.add_events_to_memory(
            app_name=APP, user_id="ada", events=[said("user", "tea for a day")], custom_metadata={"ttl_minutes": 1440}
        )
    )
    assert sorted(MemoryItem.objects.values_list("ttl_minutes", flat=True)) == [60, 1440]
    MemoryItem.objects.filter(ttl_minutes=60).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert texts(run(memory.search_memory(app_name=APP, user_id="ada", query="tea"))) == ["tea for a day"]
    call_command("expire_memories", stdout=__import__("io").StringIO())
    assert [value for _, _, value in raw_rows("ada")] and len(raw_rows("ada")) == 1


def test_staff_find_a_persons_adk_memories_in_the_admin(memory, admin_client):
    from django.urls import reverse

    remember(memory, "ada", "ada likes tea")
    remember(memory, "bob", "bob likes tea")
    listed = admin_client.get(reverse("admin:userdata_app_memoryitem_changelist") + "?user_id=ada")
    assert listed.status_code == 200 and listed.context["cl"].result_count == 1
    item = listed.context["cl"].result_list[0]
    page = admin_client.get(reverse("admin:userdata_app_memoryitem_change", args=[item.pk])).content.decode()
    assert "users.ada.adk-memory.notes_app" in page and "ada likes tea" in page


# --- Differential: the same random sequences on ADK's InMemoryMemoryService ---------------------------

WORDS = ["tea", "coffee", "paris", "lyon", "Tea", "PARIS", "blue", "green"]  # no author, role or id words
USERS = [(APP, "ada"), (APP, "bob"), ("other_app", "ada")]
texts_ = st.lists(st.sampled_from(WORDS), min_size=0, max_size=3).map(" ".join)
steps = st.lists(
    st.one_of(
        # Append events to one of a user's sessions, then add the whole session (it grows).
        st.tuples(
            st.just("session"), st.sampled_from(USERS), st.sampled_from(["s1", "s2"]), st.lists(texts_, max_size=2)
        ),
        # Add events directly, under a session id add_session_to_memory never uses (or none).
        st.tuples(
            st.just("events"), st.sampled_from(USERS), st.sampled_from([None, "e1"]), st.lists(texts_, max_size=2)
        ),
        st.tuples(
            st.just("search"), st.sampled_from(USERS), st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join)
        ),
        st.tuples(st.just("delete"), st.sampled_from(USERS), st.integers(0, 4)),  # 4 and up: an id never made
    ),
    max_size=12,
)


def comparable(response) -> list[dict]:
    return sorted((entry.model_dump() for entry in response.memories), key=lambda entry: entry["id"])


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
@example(  # forgotten, then its session added again (issue #6949's "deleted memories come back")
    steps=[
        ("session", (APP, "ada"), "s1", ["tea", "blue"]),
        ("delete", (APP, "ada"), 1),
        ("session", (APP, "ada"), "s1", ["green tea"]),
        ("events", (APP, "ada"), None, ["coffee"]),
        ("delete", (APP, "ada"), 0),
        ("events", (APP, "ada"), None, []),
    ]
)
def test_random_sequences_answer_as_adks_in_memory_service(live_server, memory_key, steps):
    answers_as_adks_in_memory_service(live_server, memory_key, steps)


@pytest.mark.slow
@pytest.mark.crosscheck
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
def test_many_random_sequences_answer_as_adks_in_memory_service(live_server, memory_key, steps):
    answers_as_adks_in_memory_service(live_server, memory_key, steps)


def answers_as_adks_in_memory_service(live_server, memory_key, steps) -> None:
    """At most 9 events per user here, so both services' limit of 10 never cuts; results are
    compared as sets (ADK's ranks by words in common, this one newest first until the engine ranks)."""
    MemoryItem.objects.all().delete()

    async def scenario() -> None:
        ours, reference = AgentStateMemoryService(live_server.url, memory_key), InMemoryMemoryService()
        sessions: dict[tuple[str, str, str], list[Event]] = {}
        made: dict[tuple[str, str], list[Event]] = {scope: [] for scope in USERS}  # at most 9 per user
        for step in steps:
            kind, (app_name, user_id) = step[0], step[1]
            if kind in ("session", "events"):
                mine = made[(app_name, user_id)]
                new = [said("user" if len(mine) % 2 else "agent", text) for text in step[3]][: 9 - len(mine)]
                mine += new
            if kind == "session":
                events = sessions.setdefault((app_name, user_id, step[2]), [])
                events += new
                session = session_of(user_id, step[2], list(events), app_name)
                for service in (ours, reference):
                    await service.add_session_to_memory(session)
            elif kind == "events":
                for service in (ours, reference):
                    await service.add_events_to_memory(
                        app_name=app_name, user_id=user_id, events=new, session_id=step[2]
                    )
            elif kind == "search":
                found = [
                    await s.search_memory(app_name=app_name, user_id=user_id, query=step[2]) for s in (ours, reference)
                ]
                assert comparable(found[0]) == comparable(found[1]), step
            else:
                mine = made[(app_name, user_id)]
                memory_id = mine[-1 - step[2]].id if step[2] < min(4, len(mine)) else str(uuid.uuid4())
                for service in (ours, reference):
                    await service.delete_memory(app_name=app_name, user_id=user_id, memory_id=memory_id)
        for app_name, user_id in USERS:
            for word in WORDS:
                found = [
                    await s.search_memory(app_name=app_name, user_id=user_id, query=word) for s in (ours, reference)
                ]
                assert comparable(found[0]) == comparable(found[1]), (app_name, user_id, word)
        await ours.close()

    run(scenario())
