"""AgentStateSessionService's read cache against a live server: every read asks the server with the
token of what this process holds and gets only the events appended since, or everything when the
held events are no longer the session's. A stale read is a bug: another writer's event, retention,
an erasure of the user's data and a session deleted and created again are always seen.

Runs on SQLite, and on PostgreSQL when DATABASE_URL names one."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta

import pytest
import pytest_asyncio
from django.utils import timezone
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from agentstate.integrations.adk import AgentStateSessionService
from backends.adk.process.models import AdkEvent
from sessions_app.services import retention_apply, retention_policy_save
from tests.client.keys import api_key_new
from userdata_app.erasure import erasure_execute
from userdata_app.models import ErasureRequest, ErasureSubject

pytestmark = pytest.mark.asyncio
APP = "weather_app"


@pytest.fixture
def adk_key(transactional_db, tenant) -> str:
    return api_key_new(tenant)


@pytest_asyncio.fixture
async def reader(live_server, adk_key):
    """The process that reads (and caches)."""
    service = AgentStateSessionService(live_server.url, adk_key)
    yield service
    await service.close()


@pytest_asyncio.fixture
async def writer(live_server, adk_key):
    """Another process writing to the same sessions."""
    service = AgentStateSessionService(live_server.url, adk_key)
    yield service
    await service.close()


def _event(text: str, *, timestamp: float, delta: dict | None = None) -> Event:
    return Event(
        author="user",
        invocation_id="inv",
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        actions=EventActions(state_delta=delta or {}),
        timestamp=timestamp,
    )


def _texts(session) -> list[str]:
    return [e.content.parts[0].text for e in session.events]


async def _read(service: AgentStateSessionService, session_id: str, config: GetSessionConfig | None = None):
    return await service.get_session(app_name=APP, user_id="u1", session_id=session_id, config=config)


async def test_another_writers_events_are_always_seen_in_their_place(reader, writer, live_server, adk_key):
    base = time.time()
    session = await writer.create_session(app_name=APP, user_id="u1", session_id="s")
    for i in range(5):
        await writer.append_event(session, _event(f"e{i}", timestamp=base + 2 * i))
    assert _texts(await _read(reader, "s")) == ["e0", "e1", "e2", "e3", "e4"]
    assert reader.cache_info()["misses"] == 1 and reader.cache_info()["sessions"] == 1

    # Another writer appends, some events older than ones the reader holds (ADK orders by time).
    session = await _read(writer, "s")
    for text, at in [("late", base + 9), ("between", base + 3), ("tie", base + 4)]:
        await writer.append_event(session, _event(text, timestamp=at))
    got = await _read(reader, "s")
    fresh = AgentStateSessionService(live_server.url, adk_key)  # nothing held: the server orders them
    expected = await _read(fresh, "s")
    await fresh.close()
    assert _texts(got) == _texts(expected) == ["e0", "e1", "between", "e2", "tie", "e3", "e4", "late"]
    assert got.events == expected.events and got.state == expected.state
    assert reader.cache_info()["hits"] == 1

    # Nothing new: the held events, still checked with the server.
    again = await _read(reader, "s")
    assert _texts(again) == _texts(expected) and reader.cache_info()["hits"] == 2
    # The caller's session is its own: appending to it changes nothing held.
    await reader.append_event(again, _event("mine", timestamp=base + 20))
    assert _texts(await _read(reader, "s"))[-1] == "mine"
    assert _texts(await _read(writer, "s")) == _texts(await _read(reader, "s"))


async def test_many_new_events_come_in_pages(reader, writer, monkeypatch):
    from backends.adk.process import selectors

    monkeypatch.setattr(selectors, "EVENT_PAGE_SIZE", 2)
    base = time.time()
    session = await writer.create_session(app_name=APP, user_id="u1", session_id="p")
    await writer.append_event(session, _event("e0", timestamp=base))
    assert _texts(await _read(reader, "p")) == ["e0"]
    for i in range(1, 6):
        await writer.append_event(session, _event(f"e{i}", timestamp=base + i))
    assert _texts(await _read(reader, "p")) == [f"e{i}" for i in range(6)]
    assert reader.cache_info()["hits"] == 1


async def test_windows_of_held_events_are_the_servers_windows(reader, writer):
    base = time.time()
    session = await writer.create_session(app_name=APP, user_id="u1", session_id="w")
    for i, at in enumerate([0, 1, 2, 2, 3, 5, 8]):
        await writer.append_event(session, _event(f"e{i}", timestamp=base + at))
    await _read(reader, "w")  # holds them
    configs = [
        GetSessionConfig(num_recent_events=3),
        GetSessionConfig(num_recent_events=0),
        GetSessionConfig(num_recent_events=100),
        GetSessionConfig(after_timestamp=base + 2),
        GetSessionConfig(after_timestamp=base + 2, num_recent_events=2),
        GetSessionConfig(after_timestamp=base + 5, num_recent_events=3),  # fewer left than asked: all of them
        GetSessionConfig(after_timestamp=base + 100),
    ]
    for config in configs:  # the writer holds nothing of "w": the server picks its windows
        assert _texts(await _read(reader, "w", config)) == _texts(await _read(writer, "w", config)), config
    assert reader.cache_info()["hits"] == len(configs)


async def test_an_erasure_of_the_users_data_is_seen_by_a_reader_holding_the_events(reader, writer, tenant, settings):
    settings.ERASURE_HMAC_KEYS, settings.ERASURE_HMAC_KEY_ID = {"k1": "secret"}, "k1"
    session = await writer.create_session(app_name=APP, user_id="u1", session_id="e")
    await writer.append_event(session, _event("hi", timestamp=time.time(), delta={"user:city": "Paris", "k": 1}))
    held = await _read(reader, "e")
    assert held.events[0].actions.state_delta == {"user:city": "Paris", "k": 1}

    def erase() -> None:
        request = ErasureRequest.objects.create(scope=ErasureRequest.Scope.USER_DATA, due_on="2099-01-01")
        ErasureSubject.objects.create(request=request, tenant=tenant, user_id="u1")
        ErasureRequest.objects.filter(pk=request.pk).update(status=ErasureRequest.Status.VERIFIED)
        erasure_execute(request=request)

    await asyncio.to_thread(erase)
    after = await _read(reader, "e")
    assert after.events[0].actions.state_delta == {"k": 1} and after.state == {"k": 1}
    assert reader.cache_info()["hits"] == 0


async def test_events_retention_dropped_are_gone_for_a_reader_holding_them(reader, writer, tenant):
    session = await writer.create_session(app_name=APP, user_id="u1", session_id="r")
    for text in ("old", "new"):
        await writer.append_event(session, _event(text, timestamp=time.time()))
    assert _texts(await _read(reader, "r")) == ["old", "new"]

    def drop_old() -> None:
        retention_policy_save(tenant=tenant, drop_messages_after_days=10)
        AdkEvent.objects.filter(text="old").update(created_at=timezone.now() - timedelta(days=11))
        retention_apply()

    await asyncio.to_thread(drop_old)
    assert _texts(await _read(reader, "r")) == ["new"]


async def test_a_session_deleted_and_created_again_is_read_anew(reader, writer):
    session = await writer.create_session(app_name=APP, user_id="u1", session_id="d")
    await writer.append_event(session, _event("first life", timestamp=time.time()))
    assert _texts(await _read(reader, "d")) == ["first life"]
    await writer.delete_session(app_name=APP, user_id="u1", session_id="d")
    assert await _read(reader, "d") is None
    session = await writer.create_session(app_name=APP, user_id="u1", session_id="d")
    await writer.append_event(session, _event("second life", timestamp=time.time()))
    assert _texts(await _read(reader, "d")) == ["second life"]

    # Deleted and created again between two reads, with as many events: the same counters.
    await writer.delete_session(app_name=APP, user_id="u1", session_id="d")
    session = await writer.create_session(app_name=APP, user_id="u1", session_id="d")
    await writer.append_event(session, _event("third life", timestamp=time.time()))
    assert _texts(await _read(reader, "d")) == ["third life"]


async def test_the_cache_holds_at_most_its_bound(live_server, adk_key, writer):
    for name in ("a", "b", "c"):
        session = await writer.create_session(app_name=APP, user_id="u1", session_id=name)
        for i in range(3):
            await writer.append_event(session, _event(f"{name}{i} " + "x" * 1000, timestamp=time.time()))
    service = AgentStateSessionService(live_server.url, adk_key, cache_max_bytes=10_000)
    for name in ("a", "b", "c"):
        assert len((await _read(service, name)).events) == 3
    info = service.cache_info()
    assert 0 < info["bytes"] <= 10_000 and info["sessions"] == 2  # the least recently read went
    assert len((await _read(service, "a")).events) == 3 and service.cache_info()["hits"] == 0
    await service.close()


async def test_a_held_token_the_server_did_not_give_or_with_a_window_is_a_400(live_server, adk_key, writer):
    import httpx

    await writer.create_session(app_name=APP, user_id="u1", session_id="t")
    url = f"/api/v1/adk/apps/{APP}/users/u1/sessions/t/"
    async with httpx.AsyncClient(base_url=live_server.url, headers={"X-Api-Key": adk_key}) as http:
        token = (await http.get(url)).json()["events_token"]
        for params in ({"held": "nope"}, {"held": "1.2.-3.4"}, {"held": token, "num_recent_events": 2}):
            response = await http.get(url, params=params)
            assert response.status_code == 400 and json.loads(response.content)["error"]["fields"], params
