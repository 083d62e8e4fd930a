"""The same random calls through agentstate's LangGraph adapters (against the live test server) and
through LangGraph's in-process stores, ``InMemorySaver`` and ``InMemoryStore``: every answer is
equal but for the differences docs/CLIENT.md lists, which ``Reference*`` below normalize (each
says which). A few fixed examples run in the quick loop; random ones are slow."""

from __future__ import annotations

import pytest
from django.db import connection
from hypothesis import example, given
from hypothesis import strategies as st
from langgraph.checkpoint.base import WRITES_IDX_MAP, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT
from langgraph.store.base import GetOp, Item, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from agentstate.integrations.langgraph import AgentStateSaver
from agentstate.integrations.langgraph_store import AgentStateStore
from tests.integrations.differential import examples

pytestmark = pytest.mark.django_db(transaction=True)


# --- The checkpointer: put, put_writes, get_tuple, list, delete_thread -----------------------------

THREADS = ["t1", "t/2 ü"]
NAMESPACES = ["", "child:1"]
TASK_IDS = ["task-a", "task-b"]
TASK_PATHS = ["", "~0", "~1"]
CHANNELS = ["messages", "n"]


def checkpoint_id(step: int, thread: str, ns: str) -> str:
    """LangGraph's uuid6 form, unique per thread and namespace (so a list across them has no ties)
    and ordered by ``step`` first."""
    return f"1ef00000-0000-6000-8000-{step:08d}{THREADS.index(thread):02d}{NAMESPACES.index(ns):02d}"


versions = st.one_of(st.integers(1, 3), st.sampled_from(["00000000000000000000000000000001.0.25", "2.5"]))
metadata = st.fixed_dictionaries(
    {"source": st.sampled_from(["input", "loop", "update"]), "step": st.integers(-1, 2)},
    optional={"run_id": st.sampled_from(["r1", "r2"]), "note": st.sampled_from(["x", "ÿ"])},
)
filters = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["source", "step", "run_id", "note"]),
        st.sampled_from(["input", "loop", "r1", "x", 0, 1, 2]),
        max_size=2,
    ),
)
write_values = st.one_of(st.integers(0, 3), st.text(max_size=3), st.lists(st.integers(0, 2), max_size=2))
saver_calls = st.one_of(
    st.tuples(
        st.just("put"),
        st.sampled_from(THREADS),
        st.sampled_from(NAMESPACES),
        st.integers(0, 4),
        st.one_of(st.none(), st.integers(0, 4)),
        st.dictionaries(st.sampled_from(CHANNELS), versions, max_size=2),
        metadata,
    ),
    st.tuples(
        st.just("put_writes"),
        st.sampled_from(THREADS),
        st.sampled_from(NAMESPACES),
        st.integers(0, 4),
        st.sampled_from(TASK_IDS),
        st.sampled_from(TASK_PATHS),
        st.lists(st.tuples(st.sampled_from([*CHANNELS, INTERRUPT, ERROR]), write_values), min_size=1, max_size=3),
    ),
    st.tuples(
        st.just("get"), st.sampled_from(THREADS), st.sampled_from(NAMESPACES), st.one_of(st.none(), st.integers(0, 4))
    ),
    st.tuples(
        st.just("list"),
        st.one_of(st.none(), st.sampled_from(THREADS)),
        st.one_of(st.none(), st.sampled_from(NAMESPACES)),
        st.one_of(st.none(), st.integers(0, 4)),
        filters,
        st.one_of(st.none(), st.integers(0, 5)),
        st.one_of(st.none(), st.integers(0, 4)),
    ),
    st.tuples(st.just("delete_thread"), st.sampled_from(THREADS)),
)


def config(thread: str, ns: str | None, step: int | None = None) -> dict:
    configurable: dict = {"thread_id": thread}
    if ns is not None:
        configurable["checkpoint_ns"] = ns
        if step is not None:
            configurable["checkpoint_id"] = checkpoint_id(step, thread, ns)
    return {"configurable": configurable}


def comparable(found):
    """A CheckpointTuple as plain data; the list of them a list of that."""
    if found is None:
        return None
    if not hasattr(found, "checkpoint"):
        return [comparable(t) for t in found]
    return (found.config, found.checkpoint, found.metadata, found.parent_config, found.pending_writes)


class ReferenceSaver(InMemorySaver):
    """InMemorySaver with the differences CLIENT.md lists normalized:
    - a list across threads or namespaces is in checkpoint id order, newest first, as
      ``SqliteSaver`` and ``PostgresSaver`` list (InMemorySaver lists thread by thread);
    - ``put_writes`` of regular and special channels together (``__interrupt__``, ``__error__``,
      ...) keeps the writes already stored, as ``SqliteSaver`` and ``PostgresSaver`` do (InMemorySaver
      overwrites the special ones)."""

    def list(self, config, *, filter=None, before=None, limit=None):
        everything = sorted(
            super().list(config, filter=filter, before=before),
            key=lambda t: t.config["configurable"]["checkpoint_id"],
            reverse=True,
        )
        return iter(everything if limit is None else everything[: max(limit, 0)])

    def put_writes(self, config, writes, task_id, task_path=""):
        if all(channel in WRITES_IDX_MAP for channel, _ in writes):
            return super().put_writes(config, writes, task_id, task_path)
        configurable = config["configurable"]
        stored = self.writes[(configurable["thread_id"], configurable["checkpoint_ns"], configurable["checkpoint_id"])]
        for idx, (channel, value) in enumerate(writes):
            row = (task_id, channel, self.serde.dumps_typed(value), task_path)
            stored.setdefault((task_id, WRITES_IDX_MAP.get(channel, idx)), row)
        return None


def call(saver, step) -> object:
    kind, *args = step
    if kind == "put":
        thread, ns, number, parent, channel_versions, meta = args
        checkpoint = {
            **empty_checkpoint(),
            "id": checkpoint_id(number, thread, ns),
            "ts": "2026-01-01T00:00:00+00:00",
            "channel_versions": channel_versions,
            # one value per channel version (LangGraph's contract: InMemorySaver keeps them by version)
            "channel_values": {channel: f"{channel}@{version}" for channel, version in channel_versions.items()},
        }
        return saver.put(config(thread, ns, parent), checkpoint, meta, channel_versions)
    if kind == "put_writes":
        thread, ns, number, task_id, task_path, writes = args
        return saver.put_writes(config(thread, ns, number), writes, task_id, task_path)
    if kind == "get":
        thread, ns, number = args
        return comparable(saver.get_tuple(config(thread, ns, number)))
    if kind == "list":
        thread, ns, number, filter, before, limit = args
        listed = None if thread is None else config(thread, ns, number)
        before_config = None if before is None else {"configurable": {"checkpoint_id": checkpoint_id(before, "t1", "")}}
        return comparable(saver.list(listed, filter=filter, before=before_config, limit=limit))
    return saver.delete_thread(args[0])


def saver_answers_alike(live_server, key: str, steps) -> None:
    reference = ReferenceSaver()
    with AgentStateSaver(live_server.url, key, default_user_id="ada") as saver:
        for number, step in enumerate(steps):
            assert call(saver, step) == call(reference, step), (number, step)


A_THREAD = [
    ("put", "t1", "", 0, None, {"messages": 1}, {"source": "input", "step": -1}),
    ("put", "t1", "", 1, 0, {"messages": 2, "n": "2.5"}, {"source": "loop", "step": 0, "run_id": "r1"}),
    ("put", "t/2 ü", "child:1", 2, None, {}, {"source": "loop", "step": 0}),
    ("put_writes", "t1", "", 1, "task-a", "~0", [("n", 1), (INTERRUPT, "ask")]),
    ("put_writes", "t1", "", 1, "task-a", "~0", [(INTERRUPT, "again"), (INTERRUPT, "the last one counts")]),
    ("put_writes", "t1", "", 1, "task-b", "", [("messages", [1])]),
    ("get", "t1", "", None),
    ("list", None, None, None, None, None, None),
    ("list", "t1", None, None, {"source": "loop"}, 2, 1),
    ("list", "t1", "", 0, None, None, None),
    ("delete_thread", "t1"),
    ("get", "t1", "", 1),
    ("list", None, None, None, None, None, None),
]


@examples(max_examples=3)
@given(steps=st.lists(saver_calls, max_size=8))
@example(steps=A_THREAD)
def test_the_saver_answers_as_in_memory_saver(live_server, fresh_key, steps):
    saver_answers_alike(live_server, fresh_key(), steps)


@pytest.mark.slow
@pytest.mark.crosscheck
@examples(max_examples=50)
@given(steps=st.lists(saver_calls, min_size=5, max_size=25))
def test_random_calls_through_the_saver_answer_as_in_memory_saver(live_server, fresh_key, steps):
    saver_answers_alike(live_server, fresh_key(), steps)


# --- The store: get, put (and put None: delete), search, list_namespaces, in random batches ----------

STORE_NAMESPACES = [("users", "u1"), ("users", "u1", "a"), ("users", "u1", "a", "b"), ("users", "u2", "a")]
values = st.fixed_dictionaries({"n": st.integers(0, 3)}, optional={"tag": st.sampled_from(["x", "y"])})
keys = st.sampled_from(["k1", "k2", "k3"])
prefixes = st.sampled_from([(), ("users",), ("users", "u1"), ("users", "u1", "a"), ("users", "u2")])
store_filters = st.one_of(
    st.none(),
    st.fixed_dictionaries({"n": st.integers(0, 3)}),
    st.fixed_dictionaries({"tag": st.sampled_from(["x", "y"])}),
    st.builds(
        lambda op, n: {"n": {op: n}}, st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$ne", "$eq"]), st.integers(0, 3)
    ),
)
paths = st.lists(st.sampled_from(["users", "u1", "u2", "a", "b", "*"]), min_size=1, max_size=3)
store_ops = st.one_of(
    st.builds(
        PutOp, st.sampled_from(STORE_NAMESPACES), keys, st.one_of(st.none(), values), index=st.none(), ttl=st.none()
    ),
    st.builds(GetOp, st.sampled_from(STORE_NAMESPACES), keys),
    st.builds(
        lambda p, f, limit, offset: SearchOp(p, f, limit=limit, offset=offset),
        prefixes,
        store_filters,
        st.integers(1, 4),
        st.integers(0, 3),
    ),
    st.builds(
        lambda p, f, q: SearchOp(p, f, limit=100, offset=0, query=q),
        prefixes,
        store_filters,
        st.sampled_from(["x", "Y", "x y", "z", "!"]),
    ),
    st.builds(
        lambda prefix, suffix, depth, offset: ListNamespacesOp(
            tuple(
                [MatchCondition("prefix", tuple(prefix))] * bool(prefix)
                + [MatchCondition("suffix", tuple(suffix))] * bool(suffix)
            ),
            max_depth=depth,
            limit=100,
            offset=offset,
        ),
        st.one_of(st.just([]), paths),
        st.one_of(st.just([]), paths),
        st.one_of(st.none(), st.integers(1, 4)),
        st.integers(0, 2),
    ),
)
batches = st.lists(st.lists(store_ops, min_size=1, max_size=6), min_size=1, max_size=5)


def comparable_item(result):
    """Results without timestamps; a search with ``query`` as a sorted list (its ranking is not
    LangGraph's: see ``ReferenceStore``)."""
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    if isinstance(result, list) and result and isinstance(result[0], Item):
        return [(item.namespace, item.key, sorted(item.value.items())) for item in result]
    return result


class InMemoryStoreOfItems(InMemoryStore):
    """InMemoryStore listing only the namespaces that hold items (see ``ReferenceStore``)."""

    def _handle_list_namespaces(self, op):
        for namespace in [namespace for namespace, items in self._data.items() if not items]:
            del self._data[namespace]
        return super()._handle_list_namespaces(op)


class ReferenceStore:
    """A LangGraph store (``InMemoryStore``, ``PostgresStore``) with the differences CLIENT.md lists
    normalized:
    - ``search`` without ``query`` returns the most recently updated items first, those of one
      batch by namespace then key (``InMemoryStore`` returns them as stored);
    - ``search`` with ``query`` keeps the items whose value's strings hold any of its words
      (LangGraph's stores ignore ``query`` without an embedding index), in an order of its own
      (so compared as a set);
    - ``list_namespaces`` lists only namespaces that hold items (``InMemoryStore`` lists one once
      a get or a delete touched it, even empty)."""

    def __init__(self, store) -> None:
        self.store, self.batches, self.updated = store, 0, {}

    def batch(self, ops):
        everything = [
            SearchOp(op.namespace_prefix, op.filter, limit=1000) if isinstance(op, SearchOp) else op for op in ops
        ]
        results = [self._answer(op, found) for op, found in zip(ops, self.store.batch(everything), strict=True)]
        self.batches += 1
        for op in ops:
            if isinstance(op, PutOp):
                self.updated[(op.namespace, op.key)] = self.batches
        return results

    def _answer(self, op, found):
        if not isinstance(op, SearchOp):
            return comparable_item(found)
        if words := query_words(op):
            found = [i for i in found if words & {str(v).lower() for v in i.value.values() if isinstance(v, str)}]
            return sorted(comparable_item(found) or [])
        found = sorted(found, key=lambda i: (-self.updated[(i.namespace, i.key)], i.namespace, i.key))
        return comparable_item(found[op.offset : op.offset + op.limit])


def query_words(op) -> set[str]:
    """A search's query words (none for a query of punctuation only, which searches as none)."""
    if not isinstance(op, SearchOp) or not op.query:
        return set()
    return {word for word in op.query.lower().split() if word.strip("!")}


def store_answers_alike(store, reference, batches) -> None:
    for batch in batches:
        answers = [comparable_item(found) for found in store.batch(batch)]
        answers = [sorted(a) if query_words(op) and a else a for op, a in zip(batch, answers, strict=True)]
        assert answers == reference.batch(batch), batch


@pytest.fixture
def postgres_store(transactional_db):
    """LangGraph's PostgresStore on a database of its own beside the test database (PostgreSQL
    only), dropped after the test as the test database is."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgresStore needs PostgreSQL")
    import psycopg
    from langgraph.store.postgres import PostgresStore

    db = connection.settings_dict
    server = f"postgresql://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}"
    name = f"{db['NAME']}_langgraph_peer"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with PostgresStore.from_conn_string(f"{server}/{name}") as peer:
            peer.setup()
            yield peer, lambda: peer.conn.execute("TRUNCATE store")
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


A_BATCH = [
    [
        PutOp(("users", "u1"), "k1", {"n": 1, "tag": "x"}),
        PutOp(("users", "u1", "a"), "k2", {"n": 2}),
        PutOp(("users", "u2", "a"), "k1", {"n": 3, "tag": "y"}),
    ],
    [PutOp(("users", "u1"), "k3", {"n": 0}), GetOp(("users", "u1", "a", "b"), "k1")],
    [
        SearchOp(("users",), None, limit=2, offset=1),
        SearchOp(("users", "u1"), {"n": {"$gte": 1}}, limit=1, offset=0),
        SearchOp((), None, limit=100, offset=0, query="X y"),
        SearchOp(("users",), {"n": {"$gt": 0}}, limit=100, offset=0, query="!"),
        PutOp(("users", "u1", "a"), "k2", None),
        ListNamespacesOp((MatchCondition("suffix", ("*",)),), max_depth=2, limit=100, offset=0),
    ],
    [ListNamespacesOp((), max_depth=None, limit=100, offset=1), SearchOp(("users", "u1"), None, limit=4, offset=0)],
]


@examples(max_examples=3)
@given(batches=batches)
@example(batches=A_BATCH)
def test_the_store_answers_as_in_memory_store(live_server, fresh_key, batches):
    with AgentStateStore(live_server.url, fresh_key()) as store:
        store_answers_alike(store, ReferenceStore(InMemoryStoreOfItems()), batches)


@pytest.mark.slow
@pytest.mark.crosscheck
@examples(max_examples=40)
@given(batches=batches)
def test_random_batches_answer_as_langgraphs_in_memory_store(live_server, fresh_key, batches):
    with AgentStateStore(live_server.url, fresh_key()) as store:
        store_answers_alike(store, ReferenceStore(InMemoryStoreOfItems()), batches)


@pytest.mark.slow
@pytest.mark.crosscheck
@examples(max_examples=50)
@given(batches=batches)
def test_random_batches_answer_as_langgraphs_postgres_store(live_server, fresh_key, postgres_store, batches):
    peer, empty = postgres_store
    empty()
    with AgentStateStore(live_server.url, fresh_key()) as store:
        store_answers_alike(store, ReferenceStore(peer), batches)
