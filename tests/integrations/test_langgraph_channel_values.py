"""Channel values stored by version, apart from the checkpoints (as LangGraph's database savers keep
them): a step sends only the channels it changed, in msgpack; existing checkpoints are split by the
migration (string versions of imported threads included); a saver from before the change is
refused with a 400 that says to upgrade."""

import base64
import importlib
import operator
from typing import Annotated, TypedDict

import httpx
import ormsgpack
import pytest
from django.apps import apps
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata
from langgraph.graph import END, START, StateGraph

from agentstate.integrations.langgraph import AgentStateSaver
from backends.langgraph.process import services
from backends.langgraph.process.models import LangGraphBlob, LangGraphCheckpoint

split_migration = importlib.import_module("sessions_app.migrations.0020_langgraph_channel_values")


@pytest.fixture
def langgraph_key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="langgraph-values", tenant=tenant, scope="agent")[1]


class State(TypedDict):
    messages: Annotated[list[str], operator.add]
    notes: Annotated[list[str], operator.add]
    steps: int


def _graph(checkpointer):
    """Each run adds a reply to ``messages``; ``notes`` is written once, by the first run."""
    builder = StateGraph(State)
    builder.add_node("agent", lambda s: {"messages": [f"reply {len(s['messages'])}"], "steps": s.get("steps", 0) + 1})
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile(checkpointer=checkpointer)


class Recording(httpx.HTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[tuple[str, str, bytes]] = []

    def handle_request(self, request):
        request.read()
        self.bodies.append((request.method, request.headers.get("Content-Type", ""), request.content))
        return super().handle_request(request)


def test_a_step_sends_only_the_channels_it_changed_in_msgpack(live_server, langgraph_key):
    recording = Recording()
    with AgentStateSaver(live_server.url, langgraph_key, default_user_id="alice", transport=recording) as saver:
        graph = _graph(saver)
        config = {"configurable": {"thread_id": "t-values"}}
        graph.invoke({"messages": ["q0"], "notes": ["n" * 5_000]}, config)
        recording.bodies.clear()
        graph.invoke({"messages": ["q1"]}, config)
        state = graph.get_state(config).values

    assert state == {"messages": ["q0", "reply 1", "q1", "reply 3"], "notes": ["n" * 5_000], "steps": 2}
    posts = [(kind, body) for method, kind, body in recording.bodies if method == "POST"]
    assert posts and all(kind == "application/msgpack" for kind, _ in posts)
    sent = b"".join(body for _, body in posts)
    assert b"n" * 5_000 not in sent  # the unchanged channel does not travel again
    # Each version of a changed channel is stored once; the unchanged one once in all.
    assert LangGraphBlob.objects.filter(channel="notes").count() == 1
    assert LangGraphBlob.objects.filter(channel="messages").count() == len(
        {c.channel_versions["messages"] for c in LangGraphCheckpoint.objects.all() if "messages" in c.channel_versions}
    )


def test_a_step_of_two_nodes_takes_five_requests_at_any_length(live_server, langgraph_key):
    """What a step costs in requests (a user-visible cost): its read of the thread's newest
    checkpoint, then the four checkpoints LangGraph puts one after the other (input, and after each
    of its three tasks), the tasks' writes going with them (group commit). The thread's length
    changes nothing. The median of a few steps: a write waits a moment only for its checkpoint."""
    builder = StateGraph(State)
    builder.add_node("agent", lambda s: {"messages": [f"reply {len(s['messages'])}"]})
    builder.add_node("tool", lambda s: {"steps": s.get("steps", 0) + 1})
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "tool")
    builder.add_edge("tool", END)
    recording = Recording()
    with AgentStateSaver(live_server.url, langgraph_key, default_user_id="alice", transport=recording) as saver:
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t-requests"}}
        per_step = []
        for step in range(7):
            recording.bodies.clear()
            graph.invoke({"messages": [f"q{step}"]}, config)
            per_step.append(len(recording.bodies))
        assert len(graph.get_state(config).values["messages"]) == 14

    assert sorted(per_step)[len(per_step) // 2] == 5, per_step


def test_an_earlier_savers_requests_keep_working(live_server, langgraph_key, tenant):
    """What an AgentStateSaver from before the change sends: a whole checkpoint in JSON (base64)
    without ``channel_values``, and reads without ``channel_values=separate``, which get every
    checkpoint whole, its values put back inside it, whichever saver wrote it. A checkpoint whose
    values are not msgpack cannot be put together: that read is a 400 saying to upgrade."""
    with AgentStateSaver(live_server.url, langgraph_key, default_user_id="alice") as saver:
        values = {"messages": ["hello", {"role": "ai"}], "n": 1}
        whole = generate_checkpoint(channel_values=values, channel_versions=dict.fromkeys(values, 1))
        type_, data = saver.serde.dumps_typed(whole)
        old_put = {
            "thread_id": "t-old",
            "user_id": None,
            "default_user_id": "alice",
            "checkpoint_ns": "",
            "checkpoint_id": whole["id"],
            "parent_checkpoint_id": None,
            "checkpoint": {"type": type_, "data": base64.b64encode(data).decode()},
            "metadata": {"source": "input", "step": -1},
            "channel_versions": whole["channel_versions"],
        }
        # The new saver's checkpoint on another thread: its values stored apart.
        saver.put(generate_config("t-new"), whole, generate_metadata(step=1), whole["channel_versions"])
        with httpx.Client(base_url=live_server.url, headers={"X-Api-Key": langgraph_key}) as old:
            assert old.post("/api/v1/langgraph/checkpoints/", json=old_put).status_code == 201
            read = {
                thread: old.get(
                    "/api/v1/langgraph/checkpoint/",
                    params={"thread_id": thread, "checkpoint_ns": ""},
                    headers={"Accept": "application/msgpack"},
                )
                for thread in ("t-old", "t-new")
            }
            listed = old.get("/api/v1/langgraph/checkpoints/", params={"thread_id": "t-new"}).json()["results"]
            services.checkpoint_put(
                tenant=tenant,
                thread_id="t-json",
                user_id=None,
                default_user_id="alice",
                checkpoint_ns="",
                checkpoint_id="c1",
                parent_checkpoint_id=None,
                checkpoint={"type": "msgpack", "data": ormsgpack.packb({"channel_values": {}})},
                metadata={},
                channel_versions={"x": 1},
                channel_values=[{"channel": "x", "type": "json", "data": b"[1]"}],
            )
            refused = old.get("/api/v1/langgraph/checkpoint/", params={"thread_id": "t-json", "checkpoint_ns": ""})
        assert LangGraphBlob.objects.filter(session__session_id="t-new").exists()
        for response in read.values():
            assert response.status_code == 200
            item = ormsgpack.unpackb(response.content)
            assert saver.serde.loads_typed((item["checkpoint"]["type"], item["checkpoint"]["data"])) == whole
            assert item["channel_values"] == []
        (item,) = listed
        assert saver.serde.loads_typed(("msgpack", base64.b64decode(item["checkpoint"]["data"]))) == whole
        assert saver.get_tuple(generate_config("t-old")).checkpoint == whole  # and the new saver reads the old's

    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "saver_upgrade_required"
    assert "upgrade" in refused.json()["error"]["message"]


@pytest.mark.parametrize("version", [3, "00000000000000000000000000000003.0.4271"], ids=["int", "string"])
def test_the_migration_splits_existing_checkpoints_and_reads_answer_the_same(
    live_server, langgraph_key, tenant, version
):
    """A checkpoint stored whole (as before the change: every value inside it) is split by the data
    migration; get_tuple and list give back the same checkpoint before and after, and a thread
    imported from LangGraph's savers (string versions) goes on."""
    with AgentStateSaver(live_server.url, langgraph_key, default_user_id="alice") as saver:
        config = generate_config("t-migrated")
        values = {"messages": ["hello", {"role": "ai"}], "blob": b"\x00" * 100, "n": 7, "s": "text"}
        checkpoint = generate_checkpoint(channel_values=values, channel_versions=dict.fromkeys(values, version))
        type_, data = saver.serde.dumps_typed(checkpoint)
        services.checkpoint_put(
            tenant=tenant,
            thread_id="t-migrated",
            user_id=None,
            default_user_id="alice",
            checkpoint_ns="",
            checkpoint_id=checkpoint["id"],
            parent_checkpoint_id=None,
            checkpoint={"type": type_, "data": data},
            metadata=generate_metadata(step=1),
            channel_versions=checkpoint["channel_versions"],
            channel_values=[],  # stored whole, as the rows of an earlier version
        )
        before = saver.get_tuple(config)
        split_migration.split_checkpoints(apps, None)
        after, (listed,) = saver.get_tuple(config), list(saver.list(config))

        assert before.checkpoint["channel_values"] == values
        assert after.checkpoint == before.checkpoint and listed.checkpoint == before.checkpoint
        assert sorted(LangGraphBlob.objects.values_list("channel", "version")) == [
            ("blob", str(version)),
            ("messages", str(version)),
        ]
        kept = ormsgpack.unpackb(bytes(LangGraphCheckpoint.objects.get().value), ext_hook=lambda c, d: None)
        assert kept["channel_values"] == {"n": 7, "s": "text"}  # primitives stay in the checkpoint

        # The thread goes on: a new version of one channel, the other read at its stored version.
        following = generate_checkpoint(
            channel_values={**values, "n": 8},
            channel_versions={**checkpoint["channel_versions"], "n": saver.get_next_version(version)},
        )
        stored = saver.put(
            after.config, following, generate_metadata(step=2), {"n": following["channel_versions"]["n"]}
        )
        assert saver.get_tuple(stored).checkpoint["channel_values"] == {**values, "n": 8}
