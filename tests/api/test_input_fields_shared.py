"""Every request's input serializer shares its class's fields (``validated``): one request's
body, defaults and errors never show in another's answer, in turn or at once."""

import threading

import pytest
from rest_framework.exceptions import ValidationError

from agentstate.api.serializers import validated
from backends.langgraph.views import CheckpointBatchInput, WritesPutInput


def _batch(i: int) -> dict:
    """A batch whose one call is valid when ``i`` is even, and names a wrong type otherwise."""
    body = {
        "thread_id": f"t{i}",
        "default_user_id": f"u{i}",
        "checkpoint_ns": "",
        "checkpoint_id": f"c{i}",
        "task_id": f"k{i}",
        "writes": [],
    }
    if i % 2:
        body["user_id"] = i  # not a string
    return {"calls": [{"path": "writes", "body": body}]}


def _expected(i: int) -> dict:
    return {**_batch(i)["calls"][0]["body"], "user_id": None, "task_path": "", "replace": False}


def _answer(i: int) -> object:
    """The batch checked, then its call's body as the call's own endpoint checks it."""
    try:
        return validated(WritesPutInput, validated(CheckpointBatchInput, _batch(i))["calls"][0]["body"])
    except ValidationError as exc:
        return exc.detail


def test_an_error_does_not_follow_into_the_next_body():
    assert _answer(1) == {"user_id": ["Must be a string."]}
    assert _answer(2) == _expected(2)
    with pytest.raises(ValidationError) as refused:
        validated(CheckpointBatchInput, {"calls": []})
    assert set(refused.value.detail) == {"calls"}
    assert _answer(4) == _expected(4)


def test_threads_validating_at_once_get_their_own_answers():
    count, rounds = 8, 200
    barrier = threading.Barrier(count)
    wrong: list = []

    def run(n: int) -> None:
        barrier.wait(timeout=30)
        for r in range(rounds):
            i = n * rounds + r
            answer = _answer(i)
            if answer != (_expected(i) if i % 2 == 0 else {"user_id": ["Must be a string."]}):
                wrong.append((i, answer))

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not wrong
