"""AgentStateSaver's sync methods, identifier mapping, thread ownership and the subject's rights
(erasure, export), against a live server. The conformance suite (test_langgraph_conformance.py)
covers the async methods."""

import uuid

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import INTERRUPT

from agentstate.client import Conflict, ValidationError
from agentstate.integrations import langgraph as integration
from agentstate.integrations.langgraph import AgentStateSaver, escape_text, unescape_text
from agentstate.streaming import materialized
from sessions_app.subject_data import subject_sessions_export


@pytest.fixture
def langgraph_key(transactional_db, tenant) -> str:
    from agentstate.tenancy.models import APIKey

    return APIKey.objects.create_key(name="langgraph-saver", tenant=tenant, scope="agent")[1]


@pytest.fixture
def saver(live_server, langgraph_key):
    with AgentStateSaver(live_server.url, langgraph_key, default_user_id="alice") as saver:
        yield saver


def put_chain(saver, thread_id, steps, *, ns="", user_id=None, values=None, run_id=None):
    """``steps`` checkpoints, each the parent of the next; returns their stored configs."""
    stored, parent = [], None
    for step in range(steps):
        config = generate_config(thread_id, checkpoint_ns=ns)
        if user_id is not None:
            config["configurable"]["user_id"] = user_id
        if parent is not None:
            config["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
        checkpoint = generate_checkpoint(channel_values=values or {}, channel_versions=dict.fromkeys(values or {}, 1))
        metadata = generate_metadata(
            source="loop" if step % 2 else "input", step=step, **({"run_id": run_id} if run_id else {})
        )
        parent = saver.put(config, checkpoint, metadata, checkpoint["channel_versions"])
        stored.append(parent)
    return stored


def ids(tuples):
    return [t.checkpoint["id"] for t in tuples]


def test_sync_put_get_list_and_writes(saver):
    stored = put_chain(saver, "t-sync", 3, values={"messages": ["hi"], "n": 1})
    saver.put_writes(stored[-1], [("messages", "next"), (INTERRUPT, {"ask": "ok?"})], "task-1", task_path="a")
    saver.put_writes(stored[-1], [("messages", "next")], "task-1", task_path="a")  # a retry stores nothing twice

    latest = saver.get_tuple(generate_config("t-sync"))
    assert latest.config == stored[-1]
    assert latest.checkpoint["channel_values"] == {"messages": ["hi"], "n": 1}
    assert latest.metadata["step"] == 2
    assert latest.parent_config["configurable"]["checkpoint_id"] == stored[1]["configurable"]["checkpoint_id"]
    assert sorted(latest.pending_writes, key=str) == sorted(
        [("task-1", "messages", "next"), ("task-1", INTERRUPT, {"ask": "ok?"})], key=str
    )
    first = saver.get_tuple(stored[0])
    assert first.parent_config is None and first.pending_writes == []
    assert saver.get_tuple(generate_config("t-sync", checkpoint_id=str(uuid.uuid4()))) is None
    assert saver.get_tuple(generate_config("no-such-thread")) is None

    everything = list(saver.list(generate_config("t-sync")))
    assert ids(everything) == [c["configurable"]["checkpoint_id"] for c in reversed(stored)]
    assert ids(saver.list(generate_config("t-sync"), filter={"source": "input"})) == ids(everything)[::2]
    assert ids(saver.list(generate_config("t-sync"), before=stored[2], limit=1)) == ids(everything)[1:2]


def test_list_follows_cursor_pages_and_stops_at_limit(saver, monkeypatch):
    monkeypatch.setattr(integration, "PAGE_SIZE", 2)  # five checkpoints: three pages
    stored = put_chain(saver, "t-pages", 5)
    newest_first = [c["configurable"]["checkpoint_id"] for c in reversed(stored)]

    assert ids(saver.list(generate_config("t-pages"))) == newest_first
    assert ids(saver.list(generate_config("t-pages"), limit=3)) == newest_first[:3]
    assert ids(saver.list({"configurable": {"thread_id": "t-pages"}})) == newest_first  # every namespace
    assert ids(saver.list(None, limit=4)) == newest_first[:4]  # every thread of the tenant


def test_reads_travel_in_msgpack_and_give_back_what_was_put(live_server, langgraph_key):
    """The saver asks for msgpack (the bytes as they are, no base64); what comes back is unchanged,
    an integer in the metadata past msgpack's 64 bits included."""
    read_types = []

    class Recording(httpx.HTTPTransport):
        def handle_request(self, request):
            response = super().handle_request(request)
            if request.method == "GET":
                read_types.append(response.headers["Content-Type"])
            return response

    with AgentStateSaver(live_server.url, langgraph_key, default_user_id="alice", transport=Recording()) as saver:
        values = {"blob": bytes(range(256)) * 40, "n": 2**40}
        config = generate_config("t-msgpack")
        versions = dict.fromkeys(values, 1)
        checkpoint = generate_checkpoint(channel_values=values, channel_versions=versions)
        stored = saver.put(config, checkpoint, {"source": "input", "step": -1, "big": -(2**80)}, versions)
        saver.put_writes(stored, [("blob", b"\x00\xff")], "task-1")

        latest = saver.get_tuple(config)
        (listed,) = saver.list(config)
        assert saver.get_tuple(generate_config("t-msgpack", checkpoint_id="missing")) is None

    assert read_types[:3] == ["application/msgpack", "application/msgpack", "application/json"]  # the 404 is JSON
    for found in (latest, listed):
        assert found.checkpoint["channel_values"] == values
        assert found.metadata["big"] == -(2**80)
        assert found.pending_writes == [("task-1", "blob", b"\x00\xff")]


def test_sync_thread_operations(saver):
    put_chain(saver, "t-a", 3, run_id="run-1")
    put_chain(saver, "t-a", 2, ns="child:1", run_id="run-2")

    saver.copy_thread("t-a", "t-b")
    assert ids(saver.list(generate_config("t-b"))) == ids(saver.list(generate_config("t-a")))

    saver.prune(["t-a"], strategy="keep_latest")
    assert len(list(saver.list(generate_config("t-a")))) == 1
    assert len(list(saver.list(generate_config("t-a", checkpoint_ns="child:1")))) == 1

    saver.delete_for_runs(["run-2"])
    assert list(saver.list(generate_config("t-b", checkpoint_ns="child:1"))) == []
    assert len(list(saver.list(generate_config("t-b")))) == 3

    saver.delete_thread("t-b")
    assert saver.get_tuple(generate_config("t-b")) is None
    with pytest.raises(ValidationError) as refused:
        saver.prune(["t-a"], strategy="keep_some")
    assert "strategy" in refused.value.fields


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain",
        "a/b/../c",
        "x" * 300,
        "nul\x00inside",
        "esc\ue000ape",
        "\ue0000041 looks escaped",
        "lone \ud800 surrogate",
        "~starts-with-tilde",
        "tab\tand\nnewline",
        "é 漢字 🙂",
    ],
)
def test_escape_is_reversible(text):
    escaped = escape_text(text)
    assert unescape_text(escaped) == text
    assert "\x00" not in escaped
    escaped.encode("utf-8")  # no lone surrogates left


@given(counter=st.integers(0, 10**8), steps=st.integers(1, 4))
def test_channel_versions_go_on_in_the_type_they_have_in_langgraphs_order(counter, steps):
    """A thread begins with LangGraph's database savers' strings; a number (a thread begun by an
    earlier saver) goes on as the next integer plus a random fraction, so that a fork's version is
    not the other line's (values are stored by version); a string (an imported thread's) goes on as
    those savers' own next version would, each sorting after the last (LangGraph compares a
    thread's versions)."""
    theirs = InMemorySaver()  # the same get_next_version as SqliteSaver's and PostgresSaver's
    with AgentStateSaver("http://127.0.0.1:9", "unused", default_user_id="ada") as saver:
        first = saver.get_next_version(None, None)
        assert first.split(".")[0] == theirs.get_next_version(None, None).split(".")[0]
        forks = {saver.get_next_version(counter, None) for _ in range(3)}
        assert len(forks) == 3 and all(counter + 1 < v < counter + 2 for v in forks)
        assert all(str(v) == f"{v:.6f}".rstrip("0") for v in forks)  # six digits, as the databases write it
        version = theirs.get_next_version(counter, None)
        for _ in range(steps):
            following = saver.get_next_version(version, None)
            assert isinstance(following, str) and following > version
            assert following.split(".")[0] == theirs.get_next_version(version, None).split(".")[0]
            version = following
        with pytest.raises(ValueError, match="Channel version"):
            saver.get_next_version("not a version", None)


def test_any_identifier_and_payload_langgraph_accepts_round_trips(saver):
    thread_id = "tenant/thread\x00" + "x" * 300
    namespace = "parent:1|child\x00:2"
    values = {"text\x00key": "value\x00with NUL", "blob": b"\x00\x01", "esc": "\ue0000000"}
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": namespace}}
    checkpoint = generate_checkpoint(channel_values=values, channel_versions=dict.fromkeys(values, 1))
    metadata = generate_metadata(step=1, nested={"deep\x00key": ["\x00", "\ue000"]})
    stored = saver.put(config, checkpoint, metadata, checkpoint["channel_versions"])
    saver.put_writes(stored, [("chan\x00nel", "w\x00")], "task\x00id", task_path="p\x00")

    found = saver.get_tuple(stored)
    assert found.config["configurable"] == {
        "thread_id": thread_id,
        "checkpoint_ns": namespace,
        "checkpoint_id": checkpoint["id"],
    }
    assert found.checkpoint["channel_values"] == values
    assert found.metadata["nested"] == {"deep\x00key": ["\x00", "\ue000"]}
    assert found.pending_writes == [("task\x00id", "chan\x00nel", "w\x00")]
    assert ids(saver.list(config, filter={"nested": {"deep\x00key": ["\x00", "\ue000"]}})) == [checkpoint["id"]]
    listed = next(iter(saver.list(config)))  # a first page, read apart from get_tuple's answer
    assert listed.config == found.config and listed.metadata == found.metadata
    assert listed.checkpoint["channel_values"] == values and listed.pending_writes == found.pending_writes
    saver.delete_thread(thread_id)
    assert saver.get_tuple(stored) is None


def test_a_thread_belongs_to_the_user_of_its_first_checkpoint(saver):
    stored = put_chain(saver, "t-owned", 1, user_id="bob")
    with pytest.raises(Conflict) as refused:
        put_chain(saver, "t-owned", 1, user_id="carol")
    assert refused.value.code == "thread_owned_by_another_user"
    with pytest.raises(Conflict):
        saver.put_writes({"configurable": {**stored[0]["configurable"], "user_id": "carol"}}, [("ch", 1)], "task")
    # Writes that name no user (the configs LangGraph hands back from put) are the owner's.
    put_chain(saver, "t-owned", 1)
    saver.put_writes(stored[0], [("ch", 1)], "task")
    assert len(list(saver.list(generate_config("t-owned")))) == 2

    from backends.langgraph.process.models import LangGraphThread

    thread = LangGraphThread.objects.select_related("session").get(thread_id="t-owned")
    assert (thread.user_id, thread.session.user_id, thread.session.framework) == ("bob", "bob", "langgraph")


def test_erasure_of_one_user_removes_that_users_threads_only_and_export_shows_them(saver, tenant):
    from backends.langgraph.process.models import LangGraphCheckpoint, LangGraphWrite
    from tests.userdata_app.erasure_factories import verified_request
    from userdata_app import erasure
    from userdata_app.models import ErasureRequest

    for user in ("alice", "bob"):
        stored = put_chain(saver, f"{user}-thread", 2, user_id=user, values={"said": f"hello from {user}"})
        saver.put_writes(stored[-1], [("said", f"more from {user}")], "task")
    put_chain(saver, "alice-second", 1)  # the default user

    export = materialized(subject_sessions_export(tenant=tenant, user_id="alice"))
    threads = {s["langgraph"]["thread_id"]: s["langgraph"] for s in export}
    assert set(threads) == {"alice-thread", "alice-second"}
    assert [c["channel_values"] for c in threads["alice-thread"]["checkpoints"]] == [{"said": "hello from alice"}] * 2
    assert [w["value"] for w in threads["alice-thread"]["writes"]] == ["more from alice"]
    assert threads["alice-thread"]["checkpoints"][0]["value_type"] == "msgpack"

    request = verified_request(subjects=[(tenant, "alice")], scope=ErasureRequest.Scope.EVERYTHING)
    receipt = erasure.erasure_execute(request=request)

    assert receipt.counts["langgraph_checkpoints"] == 3 and receipt.counts["langgraph_writes"] == 1
    assert not LangGraphCheckpoint.objects.filter(user_id="alice").exists()
    assert not LangGraphWrite.objects.filter(user_id="alice").exists()
    assert saver.get_tuple(generate_config("alice-thread")) is None
    bob = saver.get_tuple(generate_config("bob-thread"))
    assert bob.checkpoint["channel_values"] == {"said": "hello from bob"}
    assert bob.pending_writes == [("task", "said", "more from bob")]
