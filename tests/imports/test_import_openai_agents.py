"""import_sessions from the OpenAI Agents SDK's SQLiteSession: after the import, the SDK's
get_items through AgentStateSession returns what it returned from the old file."""

from __future__ import annotations

import asyncio
import sqlite3
from io import StringIO

import pytest
from agents.extensions.memory.advanced_sqlite_session import AdvancedSQLiteSession
from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
from agents.memory.sqlite_session import SQLiteSession
from django.core.management import call_command
from django.utils import timezone
from sqlalchemy.ext.asyncio import create_async_engine

from agentstate.integrations.openai_agents import AgentStateSession
from sessions_app.models import Message, Session
from tests.client.keys import api_key_new
from tests.imports.test_import_adk import peer_postgres_url  # noqa: F401 (a fixture)
from tests.integrations.test_openai_agents_advanced import turn as usage_turn
from userdata_app.erasure.registry import subject_hash
from userdata_app.models import ErasedSubject

pytestmark = pytest.mark.django_db(transaction=True)

SESSION_IDS = ["chat-1", "chat/2 with a slash", "chat-3"]


def _items(n: int, session_id: str) -> list[dict]:
    return [
        {"role": "user", "content": f"{session_id} question {n}"},
        {"type": "function_call", "call_id": f"c{n}", "name": "lookup", "arguments": '{"q": "\\u0000x"}'},
        {"type": "function_call_output", "call_id": f"c{n}", "output": "found"},
        {"role": "assistant", "content": [{"type": "output_text", "text": f"answer {n}", "annotations": []}]},
    ]


@pytest.fixture
def store(tmp_path):
    """A file made by the SDK's own SQLiteSession, one item popped from the first session."""
    path = str(tmp_path / "sdk.db")

    async def fill():
        for session_id in SESSION_IDS:
            session = SQLiteSession(session_id, path)
            for n in range(3):
                await session.add_items(_items(n, session_id))
            session.close()
        first = SQLiteSession(SESSION_IDS[0], path)
        await first.pop_item()
        first.close()

    asyncio.run(fill())
    return path


async def _seen(make) -> dict:
    seen = {}
    for session_id in SESSION_IDS:
        session = make(session_id)
        seen[session_id] = (await session.get_items(), await session.get_items(limit=2))
    return seen


def _import(tenant, path, *args, kind="openai-sqlite") -> str:
    out = StringIO()
    call_command(
        "import_sessions", "--tenant", tenant.slug, "--from", kind, path, "--default-user", "ana", *args,
        stdout=out, stderr=out,
    )  # fmt: skip
    return out.getvalue()


def test_get_items_through_agentstate_is_what_the_sdk_read_from_its_file(live_server, tenant, store):
    before = asyncio.run(_seen(lambda sid: SQLiteSession(sid, store)))

    assert "imported 3 new sessions, 0 extended, 35 items" in _import(tenant, store, "--quiet")

    key = api_key_new(tenant)
    after = asyncio.run(_seen(lambda sid: AgentStateSession(sid, base_url=live_server.url, api_key=key, user_id="ana")))
    assert after == before


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_sqlalchemy_session_items_come_back_the_same(live_server, tenant, tmp_path, database, request):
    url = f"sqlite+aiosqlite:///{tmp_path / 'sdk.db'}"
    if database == "postgresql":
        url = request.getfixturevalue("peer_postgres_url")

    async def fill_and_read():
        engine = create_async_engine(url)
        for session_id in SESSION_IDS:
            session = SQLAlchemySession(session_id, engine=engine, create_tables=True)
            for n in range(2):
                await session.add_items(_items(n, session_id))
        await SQLAlchemySession(SESSION_IDS[1], engine=engine).pop_item()
        seen = await _seen(lambda sid: SQLAlchemySession(sid, engine=engine))
        await engine.dispose()
        return seen

    before = asyncio.run(fill_and_read())
    assert "imported 3 new sessions, 0 extended, 23 items" in _import(tenant, url, kind="openai-sqlalchemy")
    assert "imported 0 new sessions, 0 extended, 0 items" in _import(tenant, url, kind="openai-sqlalchemy")
    key = api_key_new(tenant)
    after = asyncio.run(_seen(lambda sid: AgentStateSession(sid, base_url=live_server.url, api_key=key, user_id="ana")))
    assert after == before


def test_a_rerun_imports_nothing_and_new_items_are_added(live_server, tenant, store):
    _import(tenant, store)
    assert "imported 0 new sessions, 0 extended, 0 items" in _import(tenant, store)
    assert Message.objects.count() == 35

    async def more():
        session = SQLiteSession("chat-3", store)
        await session.add_items(_items(9, "chat-3"))
        session.close()

    asyncio.run(more())
    assert "imported 0 new sessions, 1 extended, 4 items" in _import(tenant, store)
    key = api_key_new(tenant)
    agentstate = AgentStateSession("chat-3", base_url=live_server.url, api_key=key, user_id="ana")
    assert asyncio.run(agentstate.get_items()) == asyncio.run(SQLiteSession("chat-3", store).get_items())


def test_limit_dry_run_and_an_erased_owner(tenant, store):
    assert "would import 3 new sessions, 0 extended, 35 items" in _import(tenant, store, "--dry-run")
    assert not Session.objects.exists()
    assert "1 of 3 sessions looked at; imported 1 new sessions" in _import(tenant, store, "--limit", "1")

    key_id, digest = subject_hash(tenant_slug=tenant.slug, user_id="ana")
    now = timezone.now()
    ErasedSubject.objects.create(subject_hash=digest, key_id=key_id, scope="user_data", erased_at=now, grace_until=now)
    with sqlite3.connect(store) as db:
        db.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('chat-1', '{\"role\": \"user\"}')")
    db.close()
    out = _import(tenant, store)
    assert "Refused user 'ana': erased on request" in out and "imported 0 new sessions" in out
    assert Session.objects.count() == 1 and Message.objects.count() == 11


def test_an_advanced_sqlite_session_comes_back_with_its_branches(live_server, tenant, tmp_path):
    path = str(tmp_path / "advanced.db")

    async def fill_and_read():
        session = AdvancedSQLiteSession(session_id="chat", db_path=path, create_tables=True)
        for n in range(3):
            await session.add_items(_items(n, "chat"))
        await session.create_branch_from_turn(2, "retry")
        await session.add_items(_items(7, "chat"))
        seen = {"retry": await session.get_items()}
        await session.switch_to_branch("main")
        seen["main"] = await session.get_items()
        session.close()
        return seen

    before = asyncio.run(fill_and_read())
    assert len(before["retry"]) == 8 and len(before["main"]) == 12
    assert "imported 2 new sessions, 0 extended, 20 items" in _import(tenant, path)
    assert "imported 0 new sessions, 0 extended, 0 items" in _import(tenant, path)

    key = api_key_new(tenant)

    async def read_agentstate():
        session = AgentStateSession("chat", base_url=live_server.url, api_key=key, user_id="ana")
        seen = {"main": await session.get_items()}
        await session.switch_to_branch("retry")
        seen["retry"] = await session.get_items()
        return seen, sorted(b["branch_id"] for b in await session.list_branches())

    seen, branches = asyncio.run(read_agentstate())
    assert seen == before and branches == ["main", "retry"]


async def _usage(session) -> dict:
    """What the SDK's usage reads give: per turn of each branch, one turn, the sums."""
    return {
        "main": await session.get_turn_usage(branch_id="main"),
        "turn 2": await session.get_turn_usage(2, branch_id="main"),
        "retry": await session.get_turn_usage(branch_id="retry"),
        "all branches": await session.get_session_usage(),
        "retry's": await session.get_session_usage("retry"),
    }


async def _agentstate_usage(session: AgentStateSession) -> dict:
    """``_usage`` through agentstate, its connections closed after (a kept-alive one would hold a
    live-server thread and its database connection)."""
    try:
        return await _usage(session)
    finally:
        await session.aclose()


def test_an_advanced_sqlite_sessions_usage_per_turn_comes_back(live_server, tenant, tmp_path):
    """Turns run by the SDK's Runner, each with its usage stored as the SDK's docs show, on two branches."""
    path = str(tmp_path / "usage.db")

    async def run_turns(*questions: str, branch: str | None = None) -> dict:
        session = AdvancedSQLiteSession(session_id="chat", db_path=path, create_tables=True)
        if branch:
            await session.switch_to_branch(branch)
        for question in questions:
            await usage_turn(session, question)
        seen = await _usage(session)
        session.close()
        return seen

    async def branch_off() -> None:
        session = AdvancedSQLiteSession(session_id="chat", db_path=path, create_tables=True)
        await session.create_branch_from_turn(2, "retry")
        await usage_turn(session, "And in Oslo?")
        session.close()

    asyncio.run(run_turns("Hi, I am Ada.", "What is the weather in PARIS?", "Thanks, 100% helpful_"))
    asyncio.run(branch_off())
    before = asyncio.run(run_turns())
    assert before["all branches"]["total_turns"] == 4 and before["turn 2"]["input_tokens_details"]["cached_tokens"] == 4

    assert "imported 2 new sessions, 0 extended, 18 items" in _import(tenant, path)  # 14 items, 4 turns' usage
    assert "imported 0 new sessions, 0 extended, 0 items" in _import(tenant, path)
    agentstate = AgentStateSession("chat", base_url=live_server.url, api_key=api_key_new(tenant), user_id="ana")
    assert asyncio.run(_agentstate_usage(agentstate)) == before

    after_another_turn = asyncio.run(run_turns("Hi, I am Ada.", branch="main"))
    assert "imported 0 new sessions, 1 extended, 3 items" in _import(tenant, path)  # its two items and its usage
    assert asyncio.run(_agentstate_usage(agentstate)) == after_another_turn
