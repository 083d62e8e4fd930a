"""import_sessions from LangGraph's own checkpointers: after the import, the graph's
get_state_history through AgentStateSaver is the one it had through SqliteSaver/PostgresSaver,
forks and pending writes included."""

from __future__ import annotations

import operator
import sqlite3
from io import StringIO
from typing import Annotated, TypedDict

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from agentstate.integrations.langgraph import AgentStateSaver
from backends.langgraph.process.models import LangGraphCheckpoint, LangGraphThread
from tests.client.keys import api_key_new
from tests.imports.test_import_adk import peer_postgres_url  # noqa: F401 (a fixture)
from userdata_app.erasure.registry import subject_hash
from userdata_app.models import ErasedSubject

pytestmark = pytest.mark.django_db(transaction=True)


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(checkpointer, *, fail_at_c: bool = False):
    def step(name):
        def node(state: State) -> dict:
            if name == "c" and fail_at_c:
                raise RuntimeError("c failed")
            return {"log": [name]}

        return node

    builder = StateGraph(State)
    for name in "abc":
        builder.add_node(name, step(name))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    builder.add_edge("c", END)
    return builder.compile(checkpointer=checkpointer)


def _run(saver) -> None:
    """Threads made by LangGraph itself: a run of three steps then a fork of an earlier
    checkpoint that runs on; a thread of another user; a run that failed (its error a pending write)."""
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "t1", "user_id": "ana"}}
    graph.invoke({"log": ["start"]}, config)
    after_a = next(s for s in graph.get_state_history(config) if s.values.get("log") == ["start", "a"])
    forked = graph.update_state(after_a.config, {"log": ["edited"]})
    graph.invoke(None, {"configurable": {**forked["configurable"], "user_id": "ana"}})
    graph.invoke({"log": ["hello"]}, {"configurable": {"thread_id": "t2", "user_id": "bo"}})
    with pytest.raises(RuntimeError):
        _graph(saver, fail_at_c=True).invoke({"log": ["x"]}, {"configurable": {"thread_id": "t3"}})


def _history(saver) -> dict:
    """What the graph sees of each thread: every snapshot, and every checkpoint's pending writes."""
    graph = _graph(saver)
    seen = {}
    for thread in ("t1", "t2", "t3"):
        config = {"configurable": {"thread_id": thread}}
        snapshots = [
            (
                s.values,
                s.next,
                s.config,
                s.metadata,
                s.parent_config,
                [(t.id, t.name, t.error is not None) for t in s.tasks],
            )
            for s in graph.get_state_history(config)
        ]
        writes = [t.pending_writes for t in saver.list(config)]
        seen[thread] = (snapshots, writes)
    return seen


def _import(tenant, kind, location, *args) -> str:
    out = StringIO()
    call_command(
        "import_sessions", "--tenant", tenant.slug, "--from", kind, location, "--default-user", "ops", *args,
        stdout=out, stderr=out,
    )  # fmt: skip
    return out.getvalue()


@pytest.fixture
def sqlite_store(tmp_path):
    path = str(tmp_path / "graph.db")
    connection = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(connection)
    _run(saver)
    yield "langgraph-sqlite", path, saver
    connection.close()


@pytest.fixture
def postgres_store(peer_postgres_url):  # noqa: F811 (the fixture imported above)
    url = "postgresql://" + peer_postgres_url.split("://", 1)[1]
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        _run(saver)
        yield "langgraph-postgres", url, saver


@pytest.mark.parametrize("store", ["sqlite_store", "postgres_store"])
def test_the_graph_sees_through_agentstate_the_history_it_had(live_server, tenant, store, request):
    kind, location, peer = request.getfixturevalue(store)
    before = _history(peer)

    out = _import(tenant, kind, location, "--quiet")

    assert "imported 3 new sessions" in out
    with AgentStateSaver(live_server.url, api_key_new(tenant), default_user_id="nobody") as saver:
        assert _history(saver) == before
    owners = dict(LangGraphThread.objects.values_list("thread_id", "user_id"))
    assert owners == {"t1": "ana", "t2": "bo", "t3": "ops"}


def test_a_rerun_imports_nothing_and_a_thread_that_went_on_is_extended(live_server, tenant, sqlite_store):
    kind, location, peer = sqlite_store
    _import(tenant, kind, location)
    count = LangGraphCheckpoint.objects.count()
    assert "imported 0 new sessions, 0 extended, 0 items" in _import(tenant, kind, location)
    assert LangGraphCheckpoint.objects.count() == count

    _graph(peer).invoke({"log": ["again"]}, {"configurable": {"thread_id": "t2", "user_id": "bo"}})
    assert "imported 0 new sessions, 1 extended" in _import(tenant, kind, location)
    with AgentStateSaver(live_server.url, api_key_new(tenant), default_user_id="nobody") as saver:
        assert _history(saver) == _history(peer)


def test_a_failed_thread_is_left_for_the_next_run_and_an_erased_owner_is_refused(tenant, sqlite_store):
    kind, location, _ = sqlite_store
    key_id, digest = subject_hash(tenant_slug=tenant.slug, user_id="bo")
    now = timezone.now()
    ErasedSubject.objects.create(subject_hash=digest, key_id=key_id, scope="everything", erased_at=now, grace_until=now)
    with sqlite3.connect(location) as db:  # a real bad row: a checkpoint LangGraph cannot read back
        db.execute("UPDATE checkpoints SET type = 'msgpack', checkpoint = x'c1' WHERE thread_id = 't3'")
    db.close()

    with pytest.raises(CommandError, match="1 session"):
        _import(tenant, kind, location, "--dry-run")
    assert not LangGraphThread.objects.exists()
    with pytest.raises(CommandError, match="1 session"):
        _import(tenant, kind, location)
    assert set(LangGraphThread.objects.values_list("thread_id", flat=True)) == {"t1"}

    with sqlite3.connect(location) as db:
        db.execute("DELETE FROM checkpoints WHERE thread_id = 't3'")
        db.execute("DELETE FROM writes WHERE thread_id = 't3'")
    db.close()
    out = _import(tenant, kind, location)
    assert "Refused user 'bo'" in out and "imported 0 new sessions" in out
    assert set(LangGraphThread.objects.values_list("thread_id", flat=True)) == {"t1"}
