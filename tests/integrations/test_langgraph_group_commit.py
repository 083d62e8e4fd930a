"""AgentStateSaver's group commit: the writes LangGraph makes while one of the saver's requests is
in flight go together in the next request, and each returns only once the server stored it, with
the answer or the error it would have had alone. A transport holds the first request until the
others have queued, so the grouping is deterministic."""

import asyncio
import threading

import httpx
import pytest
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata

from agentstate.client import Conflict
from agentstate.integrations.langgraph import AgentStateSaver


@pytest.fixture
def langgraph_key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="langgraph-group-commit", tenant=tenant, scope="agent")[1]


class Held:
    """Records the requests' paths; once armed, the next request waits until ``release`` is set."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.armed = False
        self.release = threading.Event()

    def arm(self) -> None:
        self.paths.clear()
        self.armed = True

    def sent(self, request: httpx.Request) -> None:
        self.paths.append(request.url.path)
        if self.armed:
            self.armed = False
            assert self.release.wait(10)


class HeldTransport(httpx.HTTPTransport):
    def __init__(self, held: Held) -> None:
        super().__init__()
        self.held = held

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.held.sent(request)
        return super().handle_request(request)


class AsyncHeldTransport(httpx.AsyncHTTPTransport):
    def __init__(self, held: Held) -> None:
        super().__init__()
        self.held = held

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await asyncio.to_thread(self.held.sent, request)
        return await super().handle_async_request(request)


def until(check) -> None:
    for _ in range(1000):
        if check():
            return
        threading.Event().wait(0.01)
    raise AssertionError("timed out")


async def async_until(check) -> None:
    for _ in range(1000):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out")


def first_checkpoint(thread_id: str, user_id: str):
    config = generate_config(thread_id)
    config["configurable"]["user_id"] = user_id
    return config, generate_checkpoint(), generate_metadata(source="input", step=-1)


def writes_of(saver, thread_id):
    found = saver.get_tuple(generate_config(thread_id))
    return sorted((task, channel, value) for task, channel, value in found.pending_writes)


def test_writes_made_during_a_request_go_in_one_request_each_answered_alone(live_server, langgraph_key):
    held = Held()
    saver = AgentStateSaver(live_server.url, langgraph_key, default_user_id="alice", transport=HeldTransport(held))
    stored = saver.put(*first_checkpoint("t-group", "alice"), {})
    held.arm()
    outcomes: dict[str, object] = {}

    def put_writes(task: str, user_id: str) -> None:
        config = {"configurable": {**stored["configurable"], "user_id": user_id}}
        try:
            outcomes[task] = saver.put_writes(config, [("messages", task)], task, task_path=task)
        except Conflict as exc:
            outcomes[task] = exc

    first = threading.Thread(target=put_writes, args=("first", "alice"))
    first.start()
    until(lambda: held.paths)  # the first request is in flight, and held
    queued = [threading.Thread(target=put_writes, args=(f"task-{n}", "alice")) for n in range(3)]
    queued.append(threading.Thread(target=put_writes, args=("bob's", "bob")))  # names another user: refused
    for thread in queued:
        thread.start()
    until(lambda: len(saver._writes._queue) == len(queued))
    held.release.set()
    for thread in [first, *queued]:
        thread.join(10)

    assert held.paths == ["/api/v1/langgraph/writes/", "/api/v1/langgraph/batch/"]
    assert {task: outcome for task, outcome in outcomes.items() if task != "bob's"} == dict.fromkeys(
        ["first", "task-0", "task-1", "task-2"]
    )
    assert isinstance(outcomes["bob's"], Conflict) and outcomes["bob's"].code == "thread_owned_by_another_user"
    assert writes_of(saver, "t-group") == sorted(
        (task, "messages", task) for task in ["first", "task-0", "task-1", "task-2"]
    )
    saver.close()


def test_async_writes_made_during_a_request_go_in_one_request(live_server, langgraph_key):
    held = Held()
    saver = AgentStateSaver(
        live_server.url, langgraph_key, default_user_id="alice", async_transport=AsyncHeldTransport(held)
    )

    async def scenario():
        stored = await saver.aput(*first_checkpoint("t-async-group", "alice"), {})
        held.arm()
        first = asyncio.ensure_future(saver.aput_writes(stored, [("messages", "first")], "first"))
        await async_until(lambda: held.paths)
        queued = [saver.aput_writes(stored, [("messages", f"task-{n}")], f"task-{n}") for n in range(3)]
        later = asyncio.gather(*queued)
        await async_until(lambda: len(saver._async_group_commit()._queue) == len(queued))
        held.release.set()
        await asyncio.gather(first, later)
        found = await saver.aget_tuple(generate_config("t-async-group"))
        await saver.aclose()
        return sorted(value for _, _, value in found.pending_writes)

    assert asyncio.run(scenario()) == ["first", "task-0", "task-1", "task-2"]
    assert held.paths[:2] == ["/api/v1/langgraph/writes/", "/api/v1/langgraph/batch/"]


def test_a_tasks_writes_wait_for_the_checkpoint_that_follows_and_go_with_it(live_server, langgraph_key, monkeypatch):
    """LangGraph puts a superstep's checkpoint right after its tasks' writes: writes that would go
    alone wait (``LINGER_SECONDS``, long here so the test does not race) for the checkpoint, another
    task's writes joining them, and all take one request; writes nobody follows go alone once the
    wait ends."""
    from agentstate.integrations import langgraph as integration

    held = Held()
    with AgentStateSaver(
        live_server.url, langgraph_key, default_user_id="alice", transport=HeldTransport(held)
    ) as saver:
        stored = saver.put(*first_checkpoint("t-linger", "alice"), {})
        monkeypatch.setattr(integration, "LINGER_SECONDS", 30)
        held.paths.clear()
        writer = threading.Thread(target=saver.put_writes, args=(stored, [("messages", "hi")], "task-1"))
        writer.start()
        until(lambda: saver._writes._busy)  # the writes lead, waiting for company
        other = threading.Thread(target=saver.put_writes, args=(stored, [("messages", "ho")], "task-3"))
        other.start()
        until(lambda: len(saver._writes._queue) == 1)  # another task's writes: the wait goes on
        following = generate_checkpoint(channel_values={}, channel_versions={})
        saver.put(stored, following, generate_metadata(step=1), {})
        writer.join(10)
        other.join(10)
        assert held.paths == ["/api/v1/langgraph/batch/"]
        assert sorted(saver.get_tuple(stored).pending_writes) == [
            ("task-1", "messages", "hi"),
            ("task-3", "messages", "ho"),
        ]

        monkeypatch.setattr(integration, "LINGER_SECONDS", 0.05)
        saver.put_writes(stored, [("messages", "again")], "task-2")
        assert held.paths[-1] == "/api/v1/langgraph/writes/"
