"""AgentStateSession's AdvancedSQLiteSession surface (usage, turns, search by content, branches from
content) driven by the SDK's Runner with a scripted model and compared with AdvancedSQLiteSession on
the same operations; then what only agentstate's session has: rewind, fork, close."""

import asyncio

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.extensions.memory import AdvancedSQLiteSession
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from agentstate.integrations.openai_agents import main_session_id
from tests.integrations import test_openai_agents as basics
from tests.integrations.test_openai_agents import get_weather, run

pytestmark = pytest.mark.django_db(transaction=True)
oa_key, oa_session = basics.oa_key, basics.oa_session  # the fixtures: a key, and sessions closed after each test

USAGE = Usage(
    requests=1,
    input_tokens=10,
    output_tokens=5,
    total_tokens=15,
    input_tokens_details=InputTokensDetails(cached_tokens=2, cache_write_tokens=0),
    output_tokens_details=OutputTokensDetails(reasoning_tokens=1),
)
ANSWERS = {
    "Hi, I am Ada.": [[assistant_message("Hello Ada!")]],
    "What is the weather in PARIS?": [
        [function_call("get_weather", {"city": "Paris"}, call_id="c1")],
        [assistant_message("Sunny in Paris.")],
    ],
    "Thanks, 100% helpful_": [[assistant_message("Bye!")]],
    "And in Oslo?": [[function_call("get_weather", {"city": "Oslo"}, call_id="c2")], [assistant_message("Snow.")]],
}
PARTS = {
    "role": "user",
    "content": [{"type": "input_text", "text": "Look at Ünïcode paris"}, {"type": "input_text", "text": "twice"}],
}


async def turn(session, question: str) -> None:
    """One Runner turn with its scripted answer, its usage stored as the SDK's docs show."""
    set_tracing_disabled(True)
    model = ScriptedModel(ANSWERS[question], default_usage=USAGE)
    agent = Agent(name="a", instructions="help", model=model, tools=[get_weather])
    result = await Runner.run(agent, question, session=session)
    await session.store_run_usage(result)


def without_timestamps(turns):
    return [{k: v for k, v in t.items() if k != "timestamp"} for t in turns]


async def advanced_operations(session) -> list:
    seen = []
    for question in ("Hi, I am Ada.", "What is the weather in PARIS?", "Thanks, 100% helpful_"):
        await turn(session, question)
    await session.add_items([PARTS, {"role": "assistant", "content": "ok"}])
    seen.append(await session.get_turn_usage())
    seen.append(await session.get_turn_usage(2))
    seen.append(await session.get_turn_usage(9))
    seen.append(await session.get_session_usage())
    seen.append(await session.get_tool_usage())
    seen.append(await session.get_conversation_by_turns())
    seen.append(without_timestamps(await session.get_conversation_turns()))
    for term in ("paris", "Pari", "ADA", "100%", "_", "%", "", "ünïcode", "Ünïcode", "twice", "input_text", "nope"):
        seen.append((term, without_timestamps(await session.find_turns_by_content(term))))
    seen.append(await session.create_branch_from_content("weather", "oslo"))
    seen.append(await session.get_items())
    await turn(session, "And in Oslo?")
    seen.append(await session.get_turn_usage())
    seen.append(await session.get_tool_usage())
    seen.append((await session.get_session_usage(), await session.get_session_usage("oslo")))
    seen.append(await session.get_turn_usage(branch_id="main"))
    seen.append(await session.get_items(limit=2, branch_id="main"))
    seen.append(without_timestamps(await session.get_conversation_turns(branch_id="main")))
    await session.pop_item()  # the answer: turn 2 keeps its usage
    seen.append(await session.get_turn_usage())
    for _ in range(3):  # down to turn 2's user message: its usage goes with it
        await session.pop_item()
    seen.append(await session.get_turn_usage())
    await session.store_run_usage(Runner)  # no usage on it: logged, not raised
    with pytest.raises(ValueError):  # noqa: PT011 (the SDK raises a bare ValueError)
        await session.create_branch_from_content("nowhere")
    seen.append("ValueError")
    await session.delete_branch("oslo", force=True)
    seen.append(await session.get_session_usage())
    await session.clear_session()
    seen.append((await session.get_session_usage(), await session.get_turn_usage(), await session.get_tool_usage()))
    return seen


def test_usage_turns_and_search_behave_as_advanced_sqlite_session(oa_session):
    expected = run(advanced_operations(AdvancedSQLiteSession(session_id="chat-1", create_tables=True)))
    actual = run(advanced_operations(oa_session()))
    for step, (ours, theirs) in enumerate(zip(actual, expected, strict=True)):
        assert ours == theirs, f"step {step}"
    assert len(actual) == len(expected)
    # What the comparison rests on: usage was stored (turn 2 made two requests), the tool counted.
    assert expected[1]["requests"] == 2 and expected[1]["input_tokens_details"]["cached_tokens"] == 4
    assert expected[3] == {"requests": 4, "input_tokens": 40, "output_tokens": 20, "total_tokens": 60, "total_turns": 3}
    assert expected[4] == [("get_weather", 1, 2)]
    assert [t["turn"] for t in expected[7][1]] == [2, 4]  # "paris" in any case


def test_search_by_content_is_a_substring_not_the_word_search(oa_session):
    """ "Pari" finds "Paris" (the SDK's substring match), which agentstate's word search would not."""
    session = oa_session()
    run(turn(session, "What is the weather in PARIS?"))
    assert [t["turn"] for t in run(session.find_turns_by_content("Pari"))] == [1]
    assert [t["full_content"] for t in run(session.find_turns_by_content("weather in p"))] == [
        "What is the weather in PARIS?"
    ]


def test_usage_is_the_sessions_in_agentstate(oa_session, tenant):
    from sessions_app.models import RunUsage

    session = oa_session()
    run(turn(session, "Hi, I am Ada."))
    row = RunUsage.objects.get()
    assert (row.session.session_id, row.user_id, row.turn, row.total_tokens) == (
        main_session_id("chat-1"),
        "ada",
        1,
        15,
    )


async def rewind_then_go_on(session):
    for question in ("Hi, I am Ada.", "What is the weather in PARIS?", "Thanks, 100% helpful_"):
        await turn(session, question)
    removed = await session.rewind(2)
    kept = await session.get_items()
    usage = await session.get_turn_usage()
    with pytest.raises(ValueError):  # noqa: PT011 (as create_branch_from_turn: the SDK's kind of error)
        await session.rewind(5)
    await turn(session, "And in Oslo?")
    return removed, kept, usage, await session.get_conversation_turns()


def test_rewind_drops_a_turn_and_those_after_it_and_the_runner_goes_on(oa_session):
    removed, kept, usage, turns = run(rewind_then_go_on(oa_session()))
    assert removed == 6  # turn 2: question, call, output, answer; turn 3: question, answer
    assert kept == [{"role": "user", "content": "Hi, I am Ada."}, *kept[1:]] and len(kept) == 2
    assert [u["user_turn_number"] for u in usage] == [1]
    assert [t["full_content"] for t in turns] == ["Hi, I am Ada.", "And in Oslo?"]


async def fork_then_diverge(parent, make):
    await turn(parent, "Hi, I am Ada.")
    await parent.create_branch_from_turn(1, "empty-start")
    await parent.switch_to_branch("main")
    child = await parent.fork("chat-2")
    await turn(child, "And in Oslo?")
    with pytest.raises(ValueError):  # noqa: PT011
        await parent.fork("chat-2")
    return (
        await parent.get_items(),
        await child.get_items(),
        [b["branch_id"] for b in await child.list_branches()],
        await child.get_session_usage(),
        await make("chat-2").get_items(),
    )


def test_fork_copies_the_current_branch_into_a_new_sdk_session(oa_session):
    parent_items, child_items, child_branches, child_usage, reread = run(fork_then_diverge(oa_session(), oa_session))
    assert len(parent_items) == 2 and child_items[:2] == parent_items and len(child_items) == 6
    assert child_branches == ["main"] and reread == child_items
    assert child_usage["total_turns"] == 1 and child_usage["requests"] == 2  # its own run only


def test_close_ends_the_object_not_the_history(oa_session):
    session = oa_session()
    run(turn(session, "Hi, I am Ada."))
    session.close()  # from outside any loop
    with pytest.raises(RuntimeError):
        run(session.get_items())

    async def close_inside_a_loop():
        other = oa_session()
        items = await other.get_items()
        other.close()  # the SDK's close() is synchronous: callable from async code too
        await asyncio.sleep(0)
        return items

    assert len(run(close_inside_a_loop())) == 2
