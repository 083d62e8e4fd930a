"""The same random calls through ``AgentStateSession`` (against the live test server) and through the
Agents SDK's ``SQLiteSession``: add_items, get_items (every limit), pop_item, clear_session, made
by two session objects of one session id (two writers of one history, so each object's cache of
its last whole read meets the other's changes). Every answer is equal: docs/CLIENT.md lists no
difference in what these return. A few fixed examples run in the quick loop; random ones are slow."""

from __future__ import annotations

import asyncio

import pytest
from agents.memory.sqlite_session import SQLiteSession
from hypothesis import example, given
from hypothesis import strategies as st

from agentstate.integrations.openai_agents import AgentStateSession
from tests.integrations.differential import examples

pytestmark = pytest.mark.django_db(transaction=True)

# Text both stores hold (the SDK's file as JSON text, agentstate escaped): NUL, a lone surrogate.
texts = st.one_of(st.text(max_size=6), st.sampled_from(["a\x00b", "\ud800", "ünï"]))
items = st.one_of(
    st.builds(
        lambda role, text: {"role": role, "content": text}, st.sampled_from(["user", "assistant", "system"]), texts
    ),
    st.builds(
        lambda text: {"role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]},
        texts,
    ),
    st.builds(
        lambda call, text: {"type": "function_call", "call_id": call, "name": "lookup", "arguments": text},
        st.sampled_from(["c1", "c2"]),
        texts,
    ),
    st.builds(
        lambda call, text: {"type": "function_call_output", "call_id": call, "output": text},
        st.sampled_from(["c1", "c2"]),
        texts,
    ),
)
writers = st.sampled_from([0, 1])
calls = st.one_of(
    st.tuples(st.just("add_items"), writers, st.lists(items, max_size=3)),
    st.tuples(st.just("get_items"), writers, st.one_of(st.none(), st.integers(-1, 5))),
    st.tuples(st.just("pop_item"), writers),
    st.tuples(st.just("clear_session"), writers),
)


async def answers(sessions, steps) -> list:
    seen = []
    for kind, writer, *args in steps:
        seen.append(await getattr(sessions[writer], kind)(*args))
    return seen


def sessions_answer_alike(live_server, key: str, tmp_path, steps) -> None:
    path = str(tmp_path / f"sdk-{key[-8:]}.db")
    ours = [
        AgentStateSession("chat-1", base_url=live_server.url, api_key=key, user_id="ada", retries=0) for _ in range(2)
    ]
    theirs = [SQLiteSession("chat-1", path) for _ in range(2)]
    try:
        expected = asyncio.run(answers(theirs, steps))
        assert asyncio.run(answers(ours, steps)) == expected
    finally:
        for session in (*ours, *theirs):
            session.close()


A_CONVERSATION = [
    ("get_items", 0, None),
    ("add_items", 0, [{"role": "user", "content": "a\x00b"}, {"role": "assistant", "content": "\ud800"}]),
    ("get_items", 0, None),
    ("add_items", 1, [{"type": "function_call_output", "call_id": "c1", "output": "x"}]),
    ("get_items", 0, None),
    ("pop_item", 1),
    ("get_items", 0, None),
    ("get_items", 0, 0),
    ("get_items", 1, -1),
    ("get_items", 1, 2),
    ("clear_session", 0),
    ("get_items", 1, None),
    ("pop_item", 0),
    ("add_items", 1, [{"role": "user", "content": "again"}]),
    ("get_items", 0, None),
]


@examples(max_examples=3)
@given(steps=st.lists(calls, max_size=8))
@example(steps=A_CONVERSATION)
def test_the_session_answers_as_sqlite_session(live_server, fresh_key, tmp_path, steps):
    sessions_answer_alike(live_server, fresh_key(), tmp_path, steps)


@pytest.mark.slow
@pytest.mark.crosscheck
@examples(max_examples=40)
@given(steps=st.lists(calls, min_size=5, max_size=25))
def test_random_calls_answer_as_sqlite_session(live_server, fresh_key, tmp_path, steps):
    sessions_answer_alike(live_server, fresh_key(), tmp_path, steps)
