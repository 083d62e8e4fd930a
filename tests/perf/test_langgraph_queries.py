"""The LangGraph endpoints run the same statements whatever a thread's length: a step's put and
get_tuple, a page of the list with its writes (10 and 300 checkpoints)."""

import base64
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from agentstate.tenancy import selectors as tenancy_selectors
from agentstate.tenancy.services import api_key_create
from backends.langgraph.process import services

pytestmark = pytest.mark.django_db
L = "/api/v1/langgraph/"
VALUE = {"type": "msgpack", "data": base64.b64encode(b"\x81\xa1k\xa1v").decode()}


def put(tenant, thread_id, n):
    for i in range(n):
        services.checkpoint_put(
            tenant=tenant,
            thread_id=thread_id,
            user_id=None,
            default_user_id="u",
            checkpoint_ns="",
            checkpoint_id=f"c{i:06d}",
            parent_checkpoint_id=f"c{i - 1:06d}" if i else None,
            checkpoint=VALUE,
            metadata={"step": i, "source": "loop"},
            channel_versions={},
        )
        services.writes_put(
            tenant=tenant,
            thread_id=thread_id,
            user_id=None,
            default_user_id="u",
            checkpoint_ns="",
            checkpoint_id=f"c{i:06d}",
            task_id="t",
            task_path="",
            replace=False,
            writes=[{"idx": 0, "channel": "ch", "value": VALUE}],
        )


def statements(client, thread_id, n):
    body = {
        "thread_id": thread_id,
        "default_user_id": "u",
        "checkpoint_ns": "",
        "checkpoint_id": f"c{n:06d}",
        "parent_checkpoint_id": f"c{n - 1:06d}",
        "checkpoint": VALUE,
        "metadata": {"step": n},
        "channel_versions": {},
    }
    writes = {
        "thread_id": thread_id,
        "default_user_id": "u",
        "checkpoint_ns": "",
        "checkpoint_id": f"c{n:06d}",
        "task_id": "t",
        "writes": [{"idx": 0, "channel": "ch", "value": VALUE}, {"idx": 1, "channel": "ch", "value": VALUE}],
    }
    counts = []
    for call in (
        lambda: client.post(L + "checkpoints/", body, format="json"),
        lambda: client.post(L + "writes/", writes, format="json"),
        lambda: client.get(L + "checkpoint/", {"thread_id": thread_id, "checkpoint_ns": ""}),
        lambda: client.get(L + "checkpoints/", {"thread_id": thread_id, "checkpoint_ns": "", "page_size": 5}),
        lambda: client.get(
            L + "checkpoints/", {"thread_id": thread_id, "filter": '{"source": "loop"}', "page_size": 5}
        ),
    ):
        with CaptureQueriesContext(connection) as queries:
            assert call().status_code in (200, 201)
        counts.append(len(queries))
    return counts


def test_a_step_and_a_page_cost_the_same_at_10_and_300_checkpoints(tenant):
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(tenant=tenant, name="k")[1])
    tenancy_selectors.api_key_cache_clear()
    put(tenant, "short", 10)
    put(tenant, "long", 300)
    statements(client, "short", 10)  # warms the key cache
    # A put of a checkpoint or of writes to a thread that exists: on PostgreSQL one statement that
    # locks the thread's session and inserts; on SQLite the lock and the insert inside the savepoint
    # the test's transaction makes of an atomic block. A get_tuple: the checkpoint and its writes in
    # one statement. A thread's first list page: one statement, its writes and values with it; a
    # page the ORM reads (a metadata filter): the checkpoints, then their writes.
    write = 1 if connection.vendor == "postgresql" else 4
    assert statements(client, "short", 11) == statements(client, "long", 300) == [write, write, 1, 1, 2]


def test_a_batch_of_a_steps_writes_and_checkpoint_is_one_statement_on_postgresql(tenant):
    """The saver's group commit sends a step's tasks' writes with the checkpoint that follows them:
    on PostgreSQL the batch stores them in the one statement a put takes (calls to one thread by
    one user, none refused), each answered as if alone."""
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(tenant=tenant, name="k")[1])
    put(tenant, "t", 3)
    thread = {"thread_id": "t", "default_user_id": "u", "checkpoint_ns": ""}
    writes = [
        {**thread, "checkpoint_id": "c000002", "task_id": task, "writes": [{"idx": 0, "channel": "ch", "value": VALUE}]}
        for task in ("a", "b")
    ]
    checkpoint = {
        **thread,
        "checkpoint_id": "c000003",
        "parent_checkpoint_id": "c000002",
        "checkpoint": VALUE,
        "metadata": {"step": 3},
        "channel_versions": {"ch": "2"},
        "channel_values": [{"channel": "ch", **VALUE}],
    }
    calls = [{"path": "writes", "body": body} for body in writes] + [{"path": "checkpoints", "body": checkpoint}]
    client.post(L + "batch/", {"calls": calls}, format="json")  # warms the key cache
    with CaptureQueriesContext(connection) as queries:
        answer = client.post(L + "batch/", {"calls": calls}, format="json")
    assert [r["status"] for r in answer.json()["results"]] == [201, 201, 201]
    if connection.vendor == "postgresql":
        assert len(queries) == 1


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's virtual machine counts its steps")
def test_a_threads_page_does_the_same_work_at_10_and_300_checkpoints(tenant):
    """A thread's list page reads the page, not the thread: SQLite's virtual machine takes about the
    same steps for a page of 5 at 10 and at 300 checkpoints, first page and next. (A window function
    over the thread before the page's LIMIT made SQLite number every checkpoint: 30 times the steps.)"""
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(tenant=tenant, name="k")[1])
    put(tenant, "short", 10)
    put(tenant, "long", 300)
    connection.ensure_connection()

    ticks = [0]

    def tick() -> int:
        ticks[0] += 1
        return 0  # go on

    def steps(thread_id: str) -> list[int]:
        counted = []
        url = f"{L}checkpoints/?thread_id={thread_id}&checkpoint_ns=&page_size=5"
        for _ in range(2):  # the first page, then the next
            ticks[0] = 0
            connection.connection.set_progress_handler(tick, 100)
            try:
                body = client.get(url).json()
            finally:
                connection.connection.set_progress_handler(None, 100)
            counted.append(ticks[0])
            url = body["next"]
        return counted

    steps("short")  # warms the key cache
    for short, long in zip(steps("short"), steps("long"), strict=True):
        assert long < 1.5 * short, (short, long)


def test_a_subject_export_reads_a_threads_channel_values_in_the_same_statements_at_4_and_40_checkpoints(
    tenant, settings
):
    """Each exported checkpoint shows its whole state, the values it names stored apart among it:
    read for a batch of checkpoints at once (which each names, then each value once), not a query
    per checkpoint."""
    from agentstate.streaming import materialized
    from sessions_app.subject_data import subject_sessions_export

    def typed(value):
        return {"type": "json", "data": base64.b64encode(json.dumps(value).encode()).decode()}

    def thread(user_id, steps):
        for i in range(steps):
            said = [f"turn {n}" for n in range(i // 2 + 1)]  # a new value every other step, as a chat's
            services.checkpoint_put(
                tenant=tenant,
                thread_id=f"{user_id}-thread",
                user_id=user_id,
                default_user_id=user_id,
                checkpoint_ns="",
                checkpoint_id=f"c{i:06d}",
                parent_checkpoint_id=f"c{i - 1:06d}" if i else None,
                checkpoint=typed({"channel_values": {"step": i}}),  # kept inline, as LangGraph keeps primitives
                metadata={"step": i},
                channel_versions={"said": i // 2 + 1},
                channel_values=[{"channel": "said", **typed(said)}],
            )

    def exported(user_id):
        with CaptureQueriesContext(connection) as queries:
            (session,) = materialized(subject_sessions_export(tenant=tenant, user_id=user_id))
        return len(queries), [c["channel_values"] for c in session["langgraph"]["checkpoints"]]

    thread("short", 4)
    thread("long", 40)
    short, long = exported("short"), exported("long")
    assert short[0] == long[0]
    assert long[1] == [{"step": i, "said": [f"turn {n}" for n in range(i // 2 + 1)]} for i in range(40)]
    # Batches cut by bytes, the values each checkpoint names counted: a value two batches share is
    # read by each, and every checkpoint still shows its whole state.
    settings.PAGE_MAX_BYTES = 400
    small = exported("long")
    assert small[1] == long[1] and small[0] > long[0]
