"""A real graph on AgentStateSaver against a live server, under a retention policy of one day: a
thread that keeps being invoked is never ended or deleted, and one retention did end after an idle
day is reopened by the graph's next step and keeps its history (issue 23, defect 1)."""

import threading
from datetime import timedelta
from typing import TypedDict

import httpx
import pytest
from django.db import connection
from django.utils import timezone
from langgraph.graph import END, START, StateGraph

from agentstate.integrations.langgraph import AgentStateSaver
from backends.langgraph.process.models import LangGraphCheckpoint
from sessions_app import services
from sessions_app.models import Session

pytestmark = pytest.mark.django_db(transaction=True)
LONG_AGO = timedelta(days=3)


class OneAtATime(httpx.HTTPTransport):
    """The live server shares one in-memory SQLite connection between request threads: one
    request at a time there (tests/integrations/test_langgraph_example.py says more)."""

    _lock = threading.Lock()

    def handle_request(self, request):
        with self._lock:
            return super().handle_request(request)


class Count(TypedDict):
    count: int


@pytest.fixture
def graph(live_server, transactional_db, tenant):
    from agentstate.tenancy.services import api_key_create

    key = api_key_create(tenant=tenant, name="graph")[1]
    transport = OneAtATime() if connection.vendor == "sqlite" else None
    builder = StateGraph(Count)
    builder.add_node("step", lambda state: {"count": state["count"] + 1})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    with AgentStateSaver(live_server.url, key, default_user_id="alice", transport=transport) as saver:
        yield builder.compile(checkpointer=saver)


def _back_date(thread: Session, *fields: str) -> None:
    Session.objects.filter(pk=thread.pk).update(**dict.fromkeys(fields, timezone.now() - LONG_AGO))


def test_a_thread_being_invoked_is_never_ended_or_deleted_and_an_idle_end_reopens(graph, tenant):
    config = {"configurable": {"thread_id": "busy"}}
    services.retention_policy_save(tenant=tenant, end_idle_after_days=1, delete_ended_after_days=1)
    graph.invoke({"count": 0}, config)
    thread = Session.objects.get(langgraph_thread__thread_id="busy")
    _back_date(thread, "created_at", "updated_at")

    graph.invoke({"count": 10}, config)  # today: the thread is busy again
    run = services.retention_apply(tenant=tenant)

    thread.refresh_from_db()
    assert run.counts["acme"] == {"ended_sessions_deleted": 0, "idle_sessions_ended": 0}
    assert thread.ended_at is None

    # Idle for real: retention ends it, and its end is past the delete window by the next sweep.
    _back_date(thread, "updated_at")
    assert services.retention_apply(tenant=tenant).counts["acme"]["idle_sessions_ended"] == 1
    _back_date(thread, "updated_at", "ended_at")
    checkpoints = LangGraphCheckpoint.objects.filter(session=thread).count()

    result = graph.invoke({"count": 20}, config)  # the graph's next step reopens the thread
    run = services.retention_apply(tenant=tenant)

    assert result == {"count": 21}
    thread.refresh_from_db()
    assert thread.ended_at is None and not thread.ended_by_retention
    assert run.counts["acme"] == {"ended_sessions_deleted": 0, "idle_sessions_ended": 0}
    assert LangGraphCheckpoint.objects.filter(session=thread).count() > checkpoints
    assert graph.get_state(config).values == {"count": 21}
