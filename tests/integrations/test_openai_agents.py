"""AgentStateSession (agentstate.integrations.openai_agents) against a live server, driven by the
Agents SDK's own Runner with a scripted model (no network), compared item by item with the SDK's
SQLiteSession and AdvancedSQLiteSession on the same operations."""

import asyncio
import json
import runpy
from pathlib import Path

import httpx
import pytest
from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.extensions.memory import AdvancedSQLiteSession
from agents.testing import ScriptedModel, assistant_message, function_call

from agentstate.integrations.openai_agents import AgentStateSession, branch_session_id, main_session_id

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
USER = "ada"

# Every kind of input item the SDK stores: text and image parts, tool and computer calls and their
# outputs, reasoning, and text the server refuses raw (NUL, a lone surrogate).
ITEMS = [
    {"role": "user", "content": "plain text ünïcode"},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
            {"type": "input_file", "file_id": "file-1"},
        ],
    },
    {"role": "system", "content": "be brief"},
    {"role": "developer", "content": "dev note"},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "hi", "annotations": [], "logprobs": []}],
    },
    {
        "type": "function_call",
        "call_id": "c1",
        "name": "lookup",
        "arguments": '{"q": 1}',
        "id": "fc_1",
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "c1", "output": "result"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "thinking"}],
        "encrypted_content": "opaque",
    },
    {
        "type": "computer_call",
        "id": "cc_1",
        "call_id": "cc1",
        "status": "completed",
        "pending_safety_checks": [],
        "action": {"type": "click", "x": 1, "y": 2, "button": "left"},
    },
    {
        "type": "computer_call_output",
        "call_id": "cc1",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AAAA"},
    },
    {"type": "file_search_call", "id": "fs_1", "queries": ["q"], "status": "completed"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
    {"type": "mcp_call", "id": "mcp_1", "server_label": "srv", "name": "tool/with/slash", "arguments": "{}"},
    {"type": "item_reference", "id": "ref_1"},
    {"role": "user", "content": "a NUL \u0000 and a lone surrogate \ud800 survive"},
]


@pytest.fixture
def oa_key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="openai-agents-tests", tenant=tenant)[1]


OPEN: list[AgentStateSession] = []


def run(coro):
    """``asyncio.run``, then close the connections the test's sessions opened in that loop (an
    open keep-alive connection would keep a live-server thread and its database connection)."""

    async def closing():
        try:
            return await coro
        finally:
            for session in OPEN:
                await session.aclose()

    return asyncio.run(closing())


@pytest.fixture
def oa_session(live_server, oa_key):
    def make(session_id: str = "chat-1", **kwargs) -> AgentStateSession:
        session = AgentStateSession(session_id, base_url=live_server.url, api_key=oa_key, user_id=USER, **kwargs)
        OPEN.append(session)
        return session

    yield make
    OPEN.clear()


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def script():
    """Three turns, the second with a tool call."""
    return [
        [assistant_message("Hello!", item_id="m1")],
        [function_call("get_weather", {"city": "Paris"}, call_id="call-1")],
        [assistant_message("Sunny in Paris.", item_id="m2")],
        [assistant_message("Bye!", item_id="m3")],
    ]


async def run_turns(session, questions=("Hi", "Weather in Paris?", "Thanks")):
    set_tracing_disabled(True)
    agent = Agent(name="a", instructions="help", model=ScriptedModel(script()), tools=[get_weather])
    for question in questions:
        await Runner.run(agent, question, session=session)


async def operations(session) -> list:
    """The same sequence on any Session: what each step returns and what the history then is."""
    seen = []
    await run_turns(session)
    seen.append(await session.get_items())
    seen.append(await session.get_items(limit=3))
    seen.append(await session.get_items(limit=0))
    seen.append(await session.get_items(limit=-1))
    seen.append(await session.pop_item())
    await session.add_items(ITEMS)
    seen.append(await session.get_items())
    seen.append([await session.pop_item() for _ in range(3)])
    seen.append(await session.get_items(limit=5))
    await session.clear_session()
    seen.append(await session.get_items())
    seen.append(await session.pop_item())
    return seen


def test_runner_driven_history_matches_sqlite_session_item_by_item(oa_session):
    expected = run(operations(SQLiteSession("chat-1")))
    actual = run(operations(oa_session()))
    assert len(actual) == len(expected)
    for step, (ours, theirs) in enumerate(zip(actual, expected, strict=True)):
        assert ours == theirs, f"step {step}"
    assert len(expected[0]) == 8  # 3 questions, 3 answers, a tool call and its output
    assert any(item.get("type") == "function_call_output" for item in expected[0])


def test_a_missing_session_reads_empty_and_session_settings_limit_applies(oa_session):
    session = oa_session("fresh", session_settings={"limit": 2})
    assert run(session.get_items()) == [] and run(session.pop_item()) is None
    run(session.clear_session())
    run(session.add_items([{"role": "user", "content": str(i)} for i in range(4)]))
    assert run(session.get_items()) == [{"role": "user", "content": "2"}, {"role": "user", "content": "3"}]
    assert len(run(session.get_items(limit=10))) == 4


def test_more_items_than_one_append_takes_are_stored_in_order(oa_session):
    session = oa_session("big")
    items = [{"role": "user", "content": f"m{i}"} for i in range(1203)]
    run(session.add_items(items))
    assert run(session.get_items()) == items
    assert run(session.get_items(limit=700)) == items[-700:]


class Recording(httpx.AsyncHTTPTransport):
    """Records the query of each request."""

    def __init__(self):
        super().__init__()
        self.queries: list[str] = []

    async def handle_async_request(self, request):
        self.queries.append(request.url.query.decode())
        return await super().handle_async_request(request)


def test_a_whole_read_asks_only_for_what_came_after_and_sees_every_other_writer(oa_session):
    transport = Recording()
    reader, writer = oa_session("shared", transport=transport), oa_session("shared")
    run(writer.add_items([{"role": "user", "content": f"m{i}"} for i in range(5)]))

    async def read_twice(change=None):
        first = await reader.get_items()
        if change is not None:
            await change
        return first, await reader.get_items(), await oa_session("shared").get_items()

    first, again, fresh = run(read_twice(writer.add_items([{"role": "user", "content": "m5"}])))
    assert len(first) == 5 and again == fresh and [i["content"] for i in again][-2:] == ["m4", "m5"]
    assert "after_seq=4" in transport.queries[-1]  # from the last item it held, which must still be there
    for change in (writer.pop_item(), writer.clear_session(), writer.add_items([{"role": "user", "content": "x"}])):
        _, again, fresh = run(read_twice(change))
        assert again == fresh, change

    # Its own pop keeps what it holds, less the popped item; another writer's edit still shows.
    run(writer.add_items([{"role": "user", "content": f"n{i}"} for i in range(4)]))
    run(reader.get_items())
    assert run(reader.pop_item())["content"] == "n3"
    assert [i["content"] for i in run(reader.get_items())][-1] == "n2"
    assert "after_seq=" in transport.queries[-1]  # held, less n3
    run(reader.pop_item())
    run(writer.pop_item())
    assert run(reader.get_items()) == run(oa_session("shared").get_items())


def test_its_own_pop_of_an_item_added_since_its_whole_read_keeps_what_it_holds(oa_session):
    transport = Recording()
    reader, writer = oa_session("popped-after", transport=transport), oa_session("popped-after")
    run(reader.add_items([{"role": "user", "content": f"m{i}"} for i in range(5)]))
    run(reader.get_items())
    run(reader.add_items([{"role": "user", "content": "n5"}, {"role": "user", "content": "n6"}]))
    assert run(reader.pop_item())["content"] == "n6"
    assert [i["content"] for i in run(reader.get_items())] == ["m0", "m1", "m2", "m3", "m4", "n5"]
    assert "after_seq=4" in transport.queries[-1]  # what it held, and only what came after
    assert reader.cache_info() | {"chars": 0} == {
        "hits": 1,
        "misses": 1,
        "items": 6,
        "chars": 0,
        "max_chars": 32 * 2**20,
    }
    # Another writer's pop between its reads: everything is read again.
    run(reader.add_items([{"role": "user", "content": "x"}]))
    run(writer.pop_item())
    run(reader.pop_item())
    assert run(reader.get_items()) == run(oa_session("popped-after").get_items()) == run(reader.get_items())
    assert reader.cache_info()["misses"] == 2


def test_a_session_deleted_and_created_again_with_as_many_items_is_read_anew(oa_session, live_server, oa_key):
    reader, writer = oa_session("again"), oa_session("again")
    run(writer.add_items([{"role": "user", "content": f"old{i}"} for i in range(3)]))
    assert len(run(reader.get_items())) == 3
    url = f"{live_server.url}/api/v1/users/{USER}/sessions/{main_session_id('again')}/"
    assert httpx.delete(url, headers={"X-Api-Key": oa_key}).status_code == 204
    run(writer.add_items([{"role": "user", "content": f"new{i}"} for i in range(3)]))  # same seqs, generation 0
    assert [i["content"] for i in run(reader.get_items())] == ["new0", "new1", "new2"]


class LosesFirstAnswer(httpx.AsyncHTTPTransport):
    """Delivers each request but drops the answer of the first one."""

    def __init__(self):
        super().__init__()
        self.attempts = 0

    async def handle_async_request(self, request):
        self.attempts += 1
        response = await super().handle_async_request(request)
        if self.attempts == 1:
            await response.aclose()
            raise httpx.ReadError("connection dropped", request=request)
        return response


def test_a_retried_add_items_stores_nothing_twice(oa_session):
    run(oa_session("retry").add_items([{"role": "user", "content": "first"}]))
    transport = LosesFirstAnswer()
    run(oa_session("retry", transport=transport).add_items([{"role": "user", "content": "once"}]))
    assert transport.attempts == 2
    assert run(oa_session("retry").get_items()) == [
        {"role": "user", "content": "first"},
        {"role": "user", "content": "once"},
    ]


def test_concurrent_pops_each_get_a_different_item(postgres_only, oa_session):
    """PostgreSQL only: the live server's in-memory SQLite test database locks whole tables."""
    session = oa_session("race")
    run(session.add_items([{"role": "user", "content": str(i)} for i in range(6)]))

    async def pops():
        return await asyncio.gather(*(oa_session("race").pop_item() for _ in range(8)))

    popped = run(pops())
    contents = sorted(item["content"] for item in popped if item is not None)
    assert contents == [str(i) for i in range(6)] and popped.count(None) == 2


async def branch_operations(session) -> list:
    """AdvancedSQLiteSession's branch operations, in the same order on any session."""
    seen = []
    await run_turns(session)
    seen.append(await session.create_branch_from_turn(2, "alt"))
    seen.append(await session.get_items())
    await run_turns(session, ("Another question",))
    seen.append(await session.get_items())
    for call in (
        lambda: session.create_branch_from_turn(9),
        lambda: session.create_branch_from_turn(1, "alt"),
        lambda: session.switch_to_branch("nope"),
        lambda: session.delete_branch("main"),
        lambda: session.delete_branch("alt"),
        lambda: session.delete_branch(""),
    ):
        with pytest.raises(ValueError):  # noqa: PT011 (the SDK's sessions raise a bare ValueError, each with its own words)
            await call()
        seen.append("ValueError")
    # Sorted: the SDK orders by a creation time of one-second resolution, so ties are common.
    seen.append(
        sorted(
            (b["branch_id"], b["message_count"], b["user_turns"], b["is_current"])
            for b in await session.list_branches()
        )
    )
    await session.switch_to_branch("main")
    seen.append(await session.get_items())
    seen.append(await session.pop_item())
    await session.switch_to_branch("alt")
    seen.append(await session.get_items(limit=2))
    await session.delete_branch("alt", force=True)
    seen.append(await session.get_items())  # back on main
    seen.append(sorted((b["branch_id"], b["message_count"], b["is_current"]) for b in await session.list_branches()))
    with pytest.raises(ValueError):  # noqa: PT011 (as above: the type is what the SDK promises)
        await session.create_branch_from_turn(1, "alt")  # a deleted branch's name stays taken
    seen.append(await session.create_branch_from_turn(3, "third"))
    await session.clear_session()
    seen.append((await session.get_items(), await session.list_branches()))
    return seen


def test_branches_behave_as_advanced_sqlite_session(oa_session):
    expected = run(branch_operations(AdvancedSQLiteSession(session_id="chat-1", create_tables=True)))
    actual = run(branch_operations(oa_session()))
    for step, (ours, theirs) in enumerate(zip(actual, expected, strict=True)):
        assert ours == theirs, f"step {step}"
    assert len(actual) == len(expected)


def test_a_branch_is_a_fork_of_the_user_in_agentstate(oa_session, tenant):
    from sessions_app.models import Message, Session

    session = oa_session("chat/with slash")
    run(run_turns(session))
    run(session.create_branch_from_turn(3, "b"))
    main = Session.objects.get(session_id=main_session_id("chat/with slash"))
    branch = Session.objects.get(session_id=branch_session_id("chat/with slash", "b"))
    assert main.session_id.startswith("oa-session-") and main.user_id == branch.user_id == USER
    assert branch.parent_id == main.pk and branch.workspace_id == main.workspace_id
    assert branch.metadata == {"openai_agents": {"session_id": "chat/with slash", "branch": "b"}}
    stored = Message.objects.filter(session=main).order_by("seq").first()
    assert (stored.role, stored.type, json.loads(stored.content)) == (
        "user",
        "message",
        {"role": "user", "content": "Hi"},
    )


def test_branches_retention_ended_after_an_idle_day_carry_on(oa_session, tenant):
    """Retention's idle end is no delete_branch: the branch is still listed, can be switched to and
    cleared, and its next items reopen it."""
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app import services
    from sessions_app.models import Session

    session = oa_session()
    run(session.add_items([{"role": "user", "content": "Hi"}, {"role": "user", "content": "again"}]))
    run(session.create_branch_from_turn(2, "b"))
    run(session.add_items([{"role": "user", "content": "on b"}]))
    services.retention_policy_save(tenant=tenant, end_idle_after_days=1)
    Session.objects.update(updated_at=timezone.now() - timedelta(days=2))
    assert services.retention_apply(tenant=tenant).counts["acme"]["idle_sessions_ended"] == 2

    assert [b["branch_id"] for b in run(session.list_branches())] == ["main", "b"]
    run(session.switch_to_branch("main"))
    run(session.add_items([{"role": "assistant", "content": "back"}]))
    assert [item["content"] for item in run(session.get_items())] == ["Hi", "again", "back"]
    run(session.clear_session())
    assert Session.objects.filter(message_count__gt=0).count() == 0
    assert not Session.objects.filter(session_id=main_session_id("chat-1"), ended_at__isnull=False).exists()


def test_the_example_runs_three_turns_with_a_tool_call_then_a_branch(live_server, oa_key, capsys):
    example = runpy.run_path(str(ROOT / "examples" / "openai_agents_chat.py"))
    result = run(example["main"](live_server.url, oa_key))
    out = capsys.readouterr().out
    assert "Snow in Oslo" in out and "[rome-instead]" in out and "Clear skies in Rome" in out
    main_users = [i["content"] for i in result["main"] if i.get("role") == "user"]
    branch_users = [i["content"] for i in result["branch"] if i.get("role") == "user"]
    assert main_users == ["Hi, I am Ada.", "What is the weather in Paris?", "And in Oslo?"]
    assert branch_users == ["Hi, I am Ada.", "What is the weather in Rome?"]
    assert sum(i.get("type") == "function_call" for i in result["main"]) == 2
    assert {(b["branch_id"], b["user_turns"]) for b in result["branches"]} == {("main", 3), ("rome-instead", 2)}
