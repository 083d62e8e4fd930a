"""AgentStateSessionService against a live server, written from ADK's documented behaviour
(google/adk's base_session_service.py and its database and SQLite services): identity, state
scopes, events that round-trip whole, GetSessionConfig, ordering, staleness, the registry.

Runs on SQLite, and on PostgreSQL when DATABASE_URL names one."""

from __future__ import annotations

import socket
import time

import httpx
import pytest
import pytest_asyncio
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from agentstate.client import NetworkError
from agentstate.integrations.adk import AgentStateSessionService
from tests.client.keys import api_key_new

pytestmark = pytest.mark.asyncio
APP = "weather_app"


@pytest.fixture
def adk_key(transactional_db, tenant) -> str:
    return api_key_new(tenant)


@pytest_asyncio.fixture
async def adk_service(live_server, adk_key):
    service = AgentStateSessionService(live_server.url, adk_key)
    yield service
    await service.close()  # the live server's threads hold a database connection per open connection


def _event(author: str = "user", text: str = "hi", *, timestamp: float | None = None, **kwargs) -> Event:
    event = Event(
        author=author,
        invocation_id="inv-1",
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        **kwargs,
    )
    if timestamp is not None:
        event.timestamp = timestamp
    return event


def _rich_event() -> Event:
    """An event with every kind of field ADK stores: bytes, function calls and responses, actions,
    grounding, usage and custom metadata, transcriptions."""
    return Event(
        author="weather_agent",
        invocation_id="inv-7",
        branch="root.weather_agent",
        content=types.Content(
            role="model",
            parts=[
                types.Part(text="Here is the chart \u00e9\u4e2d"),
                types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00\xff\x10")),
                types.Part(
                    function_call=types.FunctionCall(id="call-1", name="get_weather", args={"city": "Paris", "days": 3})
                ),
                types.Part(
                    function_response=types.FunctionResponse(
                        id="call-1", name="get_weather", response={"temp": 21.5, "nul": "a\x00b"}
                    )
                ),
            ],
        ),
        actions=EventActions(
            state_delta={"city": "Paris", "app:units": "metric", "user:name": "Ada"},
            artifact_delta={"chart.png": 2},
            transfer_to_agent="other_agent",
            escalate=True,
            skip_summarization=True,
        ),
        grounding_metadata=types.GroundingMetadata(web_search_queries=["weather paris"]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=12, candidates_token_count=7, total_token_count=19
        ),
        custom_metadata={"trace": {"span": 1, "ok": True, "ratio": 0.1}},
        input_transcription=types.Transcription(text="what's the weather", finished=True),
        output_transcription=types.Transcription(text="sunny", finished=False),
        long_running_tool_ids={"call-1"},
        turn_complete=True,
        finish_reason=types.FinishReason.STOP,
    )


async def test_create_get_and_missing_session(adk_service):
    created = await adk_service.create_session(app_name=APP, user_id="u1", state={"k": 1})
    assert created.id and created.app_name == APP and created.user_id == "u1" and created.events == []
    got = await adk_service.get_session(app_name=APP, user_id="u1", session_id=created.id)
    assert got.id == created.id and got.state == {"k": 1} and got.last_update_time == created.last_update_time
    assert await adk_service.get_session(app_name=APP, user_id="u1", session_id="nope") is None
    with pytest.raises(AlreadyExistsError):
        await adk_service.create_session(app_name=APP, user_id="u1", session_id=created.id)


async def test_apps_and_users_never_see_each_others_sessions(adk_service):
    await adk_service.create_session(app_name="a", user_id="u1", session_id="s", state={"who": "a-u1"})
    await adk_service.create_session(app_name="b", user_id="u1", session_id="s", state={"who": "b-u1"})
    await adk_service.create_session(app_name="a", user_id="u2", session_id="s", state={"who": "a-u2"})
    for app, user in (("a", "u1"), ("b", "u1"), ("a", "u2")):
        assert (await adk_service.get_session(app_name=app, user_id=user, session_id="s")).state == {
            "who": f"{app}-{user}"
        }
    assert await adk_service.get_session(app_name="c", user_id="u1", session_id="s") is None
    assert [s.user_id for s in (await adk_service.list_sessions(app_name="a")).sessions] == ["u1", "u2"]


async def test_state_scopes_app_user_session_and_temp(adk_service):
    s1 = await adk_service.create_session(
        app_name=APP, user_id="u1", state={"app:tz": "UTC", "user:lang": "fr", "own": 1, "temp:x": 9}
    )
    assert s1.state == {"own": 1, "app:tz": "UTC", "user:lang": "fr"}
    s2 = await adk_service.create_session(app_name=APP, user_id="u1")
    s3 = await adk_service.create_session(app_name=APP, user_id="u2")
    other_app = await adk_service.create_session(app_name="other", user_id="u1")
    # A create that sets no app: or user: key answers the states as they stand.
    assert (s2.state, s3.state, other_app.state) == ({"app:tz": "UTC", "user:lang": "fr"}, {"app:tz": "UTC"}, {})
    await adk_service.append_event(
        s1, _event(actions=EventActions(state_delta={"user:lang": "de", "app:tz": "CET", "temp:t": 1, "own": 2}))
    )
    assert s1.state["temp:t"] == 1  # temp: lives in the in-memory session for the invocation
    reread = {
        s.id: s
        for s in [
            await adk_service.get_session(app_name=APP, user_id="u1", session_id=s1.id),
            await adk_service.get_session(app_name=APP, user_id="u1", session_id=s2.id),
            await adk_service.get_session(app_name=APP, user_id="u2", session_id=s3.id),
        ]
    }
    assert reread[s1.id].state == {"own": 2, "app:tz": "CET", "user:lang": "de"}
    assert reread[s2.id].state == {"app:tz": "CET", "user:lang": "de"}  # user: shared by the user's sessions
    assert reread[s3.id].state == {"app:tz": "CET"}  # app: shared by every user of the app
    assert (await adk_service.get_session(app_name="other", user_id="u1", session_id=other_app.id)).state == {}
    assert "temp:t" not in reread[s1.id].events[0].actions.state_delta  # never stored
    assert await adk_service.get_user_state(app_name=APP, user_id="u1") == {"lang": "de"}
    assert await adk_service.get_user_state(app_name=APP, user_id="nobody") == {}


async def test_events_round_trip_whole_and_partial_events_are_not_stored(adk_service):
    session = await adk_service.create_session(app_name=APP, user_id="u1")
    rich = _rich_event()
    await adk_service.append_event(session, _event(partial=True))
    await adk_service.append_event(session, rich)
    got = await adk_service.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert got.events == [rich]
    assert got.events[0].content.parts[1].inline_data.data == b"\x89PNG\x00\xff\x10"
    assert got.last_update_time == rich.timestamp
    assert got.state == {"city": "Paris", "app:units": "metric", "user:name": "Ada"}


async def test_get_session_config_window_oldest_first(adk_service, monkeypatch):
    from backends.adk.process import selectors

    monkeypatch.setattr(selectors, "EVENT_PAGE_SIZE", 3)  # several pages per read
    session = await adk_service.create_session(app_name=APP, user_id="u1")
    base = time.time()
    events = [_event(text=f"e{i}", timestamp=base + i) for i in range(8)]
    events.insert(5, _event(text="tie", timestamp=base + 4))  # same timestamp as e4: append order breaks it
    for event in events:
        await adk_service.append_event(session, event)

    async def texts(config=None):
        got = await adk_service.get_session(app_name=APP, user_id="u1", session_id=session.id, config=config)
        return [e.content.parts[0].text for e in got.events]

    everything = [e.content.parts[0].text for e in events]
    assert await texts() == everything
    assert await texts(GetSessionConfig(num_recent_events=3)) == ["e5", "e6", "e7"]
    assert await texts(GetSessionConfig(num_recent_events=4)) == ["tie", "e5", "e6", "e7"]
    assert await texts(GetSessionConfig(num_recent_events=0)) == []
    assert await texts(GetSessionConfig(num_recent_events=100)) == everything
    assert await texts(GetSessionConfig(after_timestamp=base + 4)) == ["e4", "tie", "e5", "e6", "e7"]  # inclusive
    assert await texts(GetSessionConfig(after_timestamp=base + 2, num_recent_events=2)) == ["e6", "e7"]
    assert await texts(GetSessionConfig(after_timestamp=base + 100)) == []


async def test_a_page_of_large_events_ends_at_the_byte_budget_and_the_read_still_gets_them_all(
    adk_service, live_server, adk_key, settings
):
    settings.PAGE_MAX_BYTES = 4096
    session = await adk_service.create_session(app_name=APP, user_id="u1")
    texts = [f"e{i} " + "x" * 1500 for i in range(3)] + ["bigger than a page " + "y" * 10_000] + ["e3 ", "e4 "]
    events = [_event(text=text) for text in texts]  # ADK orders by timestamp: made in append order
    for event in events:
        await adk_service.append_event(session, event)

    got = await adk_service.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert got.events == events
    async with httpx.AsyncClient(base_url=live_server.url, headers={"X-Api-Key": adk_key}) as http:
        url = f"/api/v1/adk/apps/{APP}/users/u1/sessions/{session.id}/"
        first = (await http.get(url)).json()
        pages = [[e["content"]["parts"][0]["text"][:3] for e in first["events"]]]
        following = first["events_next"]
        while following:
            page = (await http.get(url + "events/", params={"cursor": following})).json()
            pages.append([e["content"]["parts"][0]["text"][:3] for e in page["events"]])
            following = page["next"]
    assert pages == [["e0 ", "e1 ", "e2 "], ["big"], ["e3 ", "e4 "]]  # the big one still served, alone


async def test_list_sessions_one_user_or_all_ordered_by_update_paged(adk_service):
    adk_service.list_page_size = 2
    first = await adk_service.create_session(app_name=APP, user_id="u2", state={"user:x": 1})
    second = await adk_service.create_session(app_name=APP, user_id="u1")
    third = await adk_service.create_session(app_name=APP, user_id="u1")
    await adk_service.create_session(app_name="elsewhere", user_id="u1")
    await adk_service.append_event(first, _event())  # now the most recently updated
    listed = (await adk_service.list_sessions(app_name=APP)).sessions
    assert [s.id for s in listed] == [second.id, third.id, first.id]
    assert all(s.events == [] for s in listed)
    assert listed[2].state == {"user:x": 1}
    mine = (await adk_service.list_sessions(app_name=APP, user_id="u1")).sessions
    assert [s.id for s in mine] == [second.id, third.id]
    assert (await adk_service.list_sessions(app_name=APP, user_id="nobody")).sessions == []


async def test_delete_session_keeps_user_state(adk_service):
    session = await adk_service.create_session(app_name=APP, user_id="u1", state={"user:plan": "pro"})
    await adk_service.append_event(session, _event(actions=EventActions(state_delta={"user:seen": True})))
    await adk_service.delete_session(app_name=APP, user_id="u1", session_id=session.id)
    assert await adk_service.get_session(app_name=APP, user_id="u1", session_id=session.id) is None
    await adk_service.delete_session(app_name=APP, user_id="u1", session_id=session.id)  # again: no error
    assert await adk_service.get_user_state(app_name=APP, user_id="u1") == {"plan": "pro", "seen": True}


async def test_a_writer_holding_a_stale_session_is_refused(adk_service, live_server, adk_key):
    other_writer = AgentStateSessionService(live_server.url, adk_key)
    session = await adk_service.create_session(app_name=APP, user_id="u1", session_id="s1")
    mine = await adk_service.get_session(app_name=APP, user_id="u1", session_id="s1")
    theirs = await other_writer.get_session(app_name=APP, user_id="u1", session_id="s1")
    await other_writer.append_event(theirs, _event(text="first"))
    with pytest.raises(StaleSessionError):
        await adk_service.append_event(mine, _event(text="second"))
    # A session object this service never returned falls back to ADK's timestamp rule.
    session.last_update_time = 0.0
    with pytest.raises(StaleSessionError):
        await adk_service.append_event(session, _event(text="third"))
    fresh = await adk_service.get_session(app_name=APP, user_id="u1", session_id="s1")
    await adk_service.append_event(fresh, _event(text="fourth"))
    await other_writer.close()
    assert [e.content.parts[0].text for e in fresh.events] == ["first", "fourth"]


async def test_an_event_id_the_session_holds_is_refused_as_adk_refuses_it(adk_service):
    """ADK's database and SQLite services refuse it by their primary key (their driver's
    IntegrityError); the adapter raises ADK's own error for an id that exists."""
    session = await adk_service.create_session(app_name=APP, user_id="u1", session_id="s1")
    event = _event(text="once")
    await adk_service.append_event(session, event)
    with pytest.raises(AlreadyExistsError):
        await adk_service.append_event(session, event.model_copy(update={"timestamp": event.timestamp + 1}))
    stored = await adk_service.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert [e.id for e in stored.events] == [event.id]


async def test_any_identifier_adk_accepts_is_mapped_reversibly(adk_service, live_server, adk_key):
    app, user, sid = "team/app", "mail%user@example.org", "a/b\x00c"
    created = await adk_service.create_session(app_name=app, user_id=user, session_id=sid, state={"nul": "x\x00y"})
    got = await adk_service.get_session(app_name=app, user_id=user, session_id=sid)
    assert (got.app_name, got.user_id, got.id, got.state) == (app, user, sid, {"nul": "x\x00y"})
    assert [s.id for s in (await adk_service.list_sessions(app_name=app, user_id=user)).sessions] == [created.id]
    # Ordinary ids are stored as they are: the REST API and erasure find the user by the same id.
    async with httpx.AsyncClient(base_url=live_server.url, headers={"X-Api-Key": adk_key}) as http:
        response = await http.get("/api/v1/adk/apps/weather_app/sessions/", params={"user_id": "u9"})
        assert response.json() == {"sessions": [], "next": None}
        await adk_service.create_session(app_name=APP, user_id="u9", session_id="plain")
        response = await http.get("/api/v1/adk/apps/weather_app/sessions/", params={"user_id": "u9"})
        assert [(s["user_id"], s["id"]) for s in response.json()["sessions"]] == [("u9", "plain")]


async def test_built_from_a_uri_with_the_key_from_the_environment(live_server, adk_key, monkeypatch, tmp_path):
    from google.adk.cli.service_registry import get_service_registry

    monkeypatch.setenv("AGENTSTATE_API_KEY", adk_key)
    uri = live_server.url.replace("http://", "agentstate://")
    service = get_service_registry().create_session_service(uri, agents_dir=str(tmp_path))
    assert isinstance(service, AgentStateSessionService)
    created = await service.create_session(app_name=APP, user_id="u1")
    reader = AgentStateSessionService(live_server.url, adk_key)
    assert (await reader.get_session(app_name=APP, user_id="u1", session_id=created.id)).id == created.id
    await service.close()
    await reader.close()


async def test_an_unreachable_server_is_named_in_the_network_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    service = AgentStateSessionService(f"http://127.0.0.1:{port}", "key")
    with pytest.raises(NetworkError, match=rf"^GET http://127\.0\.0\.1:{port}/api/v1/adk/apps/{APP}/users/u1/"):
        await service.get_session(app_name=APP, user_id="u1", session_id="s1")
    await service.close()


async def test_event_fields_with_nul_characters_round_trip(adk_service):
    """PostgreSQL refuses NUL in text and jsonb; ADK's SQLite store keeps it, so agentstate does."""
    session = await adk_service.create_session(app_name=APP, user_id="u1")
    odd = _event(author="a\x00b", text="nul \x00 here")
    odd.id = "id\x00"
    await adk_service.append_event(session, odd)
    got = await adk_service.get_session(app_name=APP, user_id="u1", session_id=session.id)
    assert got.events == [odd]
