"""Two graphs writing checkpoints and pending writes to one LangGraph thread at once (PostgreSQL,
through the live server's request threads): nothing is lost, and every checkpoint's pending
writes are its own graph's, never the other's."""

import threading

import pytest
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata

from agentstate.integrations.langgraph import AgentStateSaver

STEPS = 15


@pytest.fixture
def langgraph_key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="langgraph-concurrency", tenant=tenant, scope="agent")[1]


def run_graph(url, key, name, start, written, errors):
    """One graph's loop: a checkpoint per step (child of its previous one), then two writes of
    each of two tasks, all tagged with the graph's name."""
    try:
        with AgentStateSaver(url, key, default_user_id="alice") as saver:
            parent = None
            start.wait()
            for step in range(STEPS):
                config = generate_config("shared-thread")
                if parent is not None:
                    config["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
                checkpoint = generate_checkpoint(channel_values={"graph": name}, channel_versions={"graph": step + 1})
                parent = saver.put(config, checkpoint, generate_metadata(step=step, graph=name), {"graph": step + 1})
                for task in ("t1", "t2"):
                    saver.put_writes(
                        parent, [("out", f"{name}/{task}/a"), ("out", f"{name}/{task}/b")], f"{name}-{task}"
                    )
                written.append((name, checkpoint["id"]))
    except Exception as exc:  # reported by the test
        errors.append(exc)


def test_two_graphs_on_one_thread_lose_nothing_and_never_mix_writes(postgres_only, live_server, langgraph_key):
    start, written, errors = threading.Barrier(2), [], []
    graphs = [
        threading.Thread(target=run_graph, args=(live_server.url, langgraph_key, name, start, written, errors))
        for name in ("g1", "g2")
    ]
    for graph in graphs:
        graph.start()
    for graph in graphs:
        graph.join(timeout=120)
    assert not errors, errors
    assert len(written) == 2 * STEPS

    with AgentStateSaver(live_server.url, langgraph_key, default_user_id="alice") as saver:
        stored = list(saver.list(generate_config("shared-thread")))
    assert sorted(t.checkpoint["id"] for t in stored) == sorted(checkpoint_id for _, checkpoint_id in written)
    for found in stored:
        name = found.checkpoint["channel_values"]["graph"]
        assert found.metadata["graph"] == name
        assert sorted(value for _, _, value in found.pending_writes) == sorted(
            f"{name}/{task}/{part}" for task in ("t1", "t2") for part in "ab"
        )
        assert {task_id for task_id, _, _ in found.pending_writes} == {f"{name}-t1", f"{name}-t2"}
        if found.parent_config is not None:  # each graph's chain runs through its own checkpoints
            parent_id = found.parent_config["configurable"]["checkpoint_id"]
            assert (name, parent_id) in written
