"""Every write path of every API against retention's idle and delete rules.

A session nobody wrote to for longer than the policy's windows, then written through one path,
survives ``retention_apply``: not ended, not deleted, the write still there. A write to a session
retention ended (and whose end is past the delete window) reopens it in the same request. The
table is checked against the URL configuration: a new write route under /api/ fails here until
it is listed or excluded with a reason. SQLite and PostgreSQL."""

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.urls import get_resolver
from django.utils import timezone

from backends.adk.people.models import AdkUserState
from backends.adk.process.models import AdkEvent
from backends.langgraph.process.models import LangGraphCheckpoint, LangGraphWrite
from sessions_app import selectors, services
from sessions_app.models import AgentTransition, Checkpoint, Message, MessagePop, Round, RunUsage, Session
from tests.api.routes import api_routes
from tests.quick_loop import first_of_each_kind

pytestmark = pytest.mark.django_db

REST = "/api/v1/users/u1/sessions/s1/"
ADK = "/api/v1/adk/apps/travel/users/u1/sessions/"
LANGGRAPH = "/api/v1/langgraph/"
IDLE_FOR = timedelta(days=3)  # past both windows of the policy below (1 day each)


def _ok(response):
    assert response.status_code < 300, response.content
    return response


def _graph_value(text: str) -> dict:
    return {"type": "json", "data": base64.b64encode(json.dumps(text).encode()).decode()}


def _checkpoint_body(checkpoint_id: str, *, thread_id: str = "t1") -> dict:
    return {
        "thread_id": thread_id,
        "default_user_id": "u1",
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint_id,
        "checkpoint": _graph_value(f"state {checkpoint_id}"),
        "metadata": {"source": "loop", "step": 1},
        "channel_versions": {},
    }


def _adk_event(event_id: str, delta: dict | None = None) -> dict:
    event = {
        "id": event_id,
        "author": "user",
        "timestamp": 1_700_000_000.0,
        "content": {"parts": [{"text": f"text of {event_id}"}]},
        "actions": {"state_delta": delta or {}},
    }
    return {"event": json.dumps(event)}


# --- The sessions each path writes, made the way an agent makes them ---------------------------


def _rest_session(api) -> Session:
    _ok(api.post("/api/v1/sessions/", {"user_id": "u1", "session_id": "s1"}, format="json"))
    _ok(api.post(REST + "messages/", {"messages": [{"role": "user", "content": "first"}]}, format="json"))
    _ok(api.post(REST + "rounds/", {"state": {"round": 1}}, format="json"))
    return Session.objects.get(session_id="s1", app_name="")


def _langgraph_thread(api) -> Session:
    _ok(api.post(LANGGRAPH + "checkpoints/", _checkpoint_body("c1"), format="json"))
    return Session.objects.get(langgraph_thread__thread_id="t1")


def _langgraph_threads(api) -> Session:
    """Thread t1, and t2 for a copy into t1."""
    _ok(api.post(LANGGRAPH + "checkpoints/", _checkpoint_body("c9", thread_id="t2"), format="json"))
    return _langgraph_thread(api)


def _adk_session(api) -> Session:
    _ok(api.post(ADK, {"session_id": "a1"}, format="json"))
    _ok(api.post(ADK + "a1/events/", _adk_event("e1"), format="json"))
    return Session.objects.get(session_id="a1", app_name="travel")


@dataclass(frozen=True)
class WritePath:
    """One write through one API: ``write`` sends it to the session ``make`` made (returning the
    response), or to the new session ``creates`` names; ``kept`` says whether what it wrote is
    still stored in the session written."""

    route: str
    method: str
    make: Callable
    write: Callable
    kept: Callable[[Session], bool]
    creates: str = ""


WRITE_PATHS = [
    WritePath(
        "message-list",
        "post",
        _rest_session,
        lambda api: api.post(REST + "messages/", {"messages": [{"content": "again"}]}, format="json"),
        lambda s: Message.objects.filter(session=s, content="again").exists(),
    ),
    WritePath(  # the OpenAI Agents SDK's add_items: every item carries a client id
        "message-list",
        "post",
        _rest_session,
        lambda api: api.post(
            REST + "messages/", {"messages": [{"client_id": "oa-1", "role": "user", "content": "{}"}]}, format="json"
        ),
        lambda s: Message.objects.filter(session=s, client_id="oa-1").exists(),
    ),
    WritePath(  # the OpenAI Agents SDK's pop_item: a pop with an idempotency key
        "message-pop",
        "post",
        _rest_session,
        lambda api: api.post(REST + "messages/pop/", {"idempotency_key": "k1"}, format="json"),
        lambda s: (
            MessagePop.objects.filter(session=s, key="k1").exists() and not Message.objects.filter(session=s).exists()
        ),
    ),
    WritePath(
        "message-rewind",
        "post",
        _rest_session,
        lambda api: api.post(REST + "messages/rewind/", {"after_seq": 0}, format="json"),
        lambda s: not Message.objects.filter(session=s).exists(),
    ),
    WritePath(  # the OpenAI Agents SDK's clear_session
        "message-clear",
        "post",
        _rest_session,
        lambda api: api.post(REST + "messages/clear/", {}, format="json"),
        lambda s: not Message.objects.filter(session=s).exists(),
    ),
    WritePath(  # the fork is the session written: a new one, whatever its source's age
        "session-fork",
        "post",
        _rest_session,
        lambda api: api.post(REST + "fork/", {"new_session_id": "s2"}, format="json"),
        lambda s: s.message_count == 1 and s.forked_from_session_id == "s1",
        creates="s2",
    ),
    WritePath(
        "session-list",
        "post",
        _rest_session,
        lambda api: api.post("/api/v1/sessions/", {"user_id": "u1", "session_id": "s3"}, format="json"),
        lambda s: s.user_id == "u1",
        creates="s3",
    ),
    WritePath(
        "session-detail",
        "patch",
        _rest_session,
        lambda api: api.patch(REST, {"metadata": {"note": "kept"}}, format="json"),
        lambda s: s.metadata == {"note": "kept"},
    ),
    WritePath(
        "round-list",
        "post",
        _rest_session,
        lambda api: api.post(REST + "rounds/", {"state": {"round": 2}}, format="json"),
        lambda s: Round.objects.filter(session=s, round_id=2).exists(),
    ),
    WritePath(
        "round-detail",
        "put",
        _rest_session,
        lambda api: api.put(REST + "rounds/1/", {"state": {"round": "one again"}}, format="json"),
        lambda s: Round.objects.filter(session=s, round_id=1, state={"round": "one again"}).exists(),
    ),
    WritePath(
        "round-detail",
        "delete",
        _rest_session,
        lambda api: api.delete(REST + "rounds/1/"),
        lambda s: not Round.objects.filter(session=s).exists(),
    ),
    WritePath(
        "checkpoint-list",
        "post",
        _rest_session,
        lambda api: api.post(REST + "checkpoints/", {"label": "cp", "state": {"k": 1}}, format="json"),
        lambda s: Checkpoint.objects.filter(session=s, label="cp").exists(),
    ),
    WritePath(
        "working-state",
        "put",
        _rest_session,
        lambda api: api.put(REST + "working-state/", {"k": "put"}, format="json"),
        lambda s: selectors.working_state_get(session=s) == {"k": "put"},
    ),
    WritePath(
        "working-state",
        "patch",
        _rest_session,
        lambda api: api.patch(REST + "working-state/", {"k": "patched"}, format="json"),
        lambda s: selectors.working_state_get(session=s) == {"k": "patched"},
    ),
    WritePath(
        "transition-list",
        "post",
        _rest_session,
        lambda api: api.post(REST + "transitions/", {"to_agent": "billing"}, format="json"),
        lambda s: AgentTransition.objects.filter(session=s, to_agent="billing").exists(),
    ),
    WritePath(
        "run-usage-list",
        "post",
        _rest_session,
        lambda api: api.post(REST + "usage/", {"total_tokens": 7}, format="json"),
        lambda s: RunUsage.objects.filter(session=s, turn=1, total_tokens=7).exists(),
    ),
    WritePath(  # LangGraph's put
        "langgraph-checkpoint-list",
        "post",
        _langgraph_thread,
        lambda api: api.post(LANGGRAPH + "checkpoints/", _checkpoint_body("c2"), format="json"),
        lambda s: LangGraphCheckpoint.objects.filter(session=s, checkpoint_id="c2").exists(),
    ),
    WritePath(  # LangGraph's put_writes
        "langgraph-writes",
        "post",
        _langgraph_thread,
        lambda api: api.post(
            LANGGRAPH + "writes/",
            {
                "thread_id": "t1",
                "default_user_id": "u1",
                "checkpoint_ns": "",
                "checkpoint_id": "c1",
                "task_id": "task-1",
                "writes": [{"idx": 0, "channel": "messages", "value": _graph_value("pending")}],
            },
            format="json",
        ),
        lambda s: LangGraphWrite.objects.filter(session=s, task_id="task-1").exists(),
    ),
    WritePath(  # the saver's group commit: writes made while its previous request was in flight
        "langgraph-batch",
        "post",
        _langgraph_thread,
        lambda api: api.post(
            LANGGRAPH + "batch/", {"calls": [{"path": "checkpoints", "body": _checkpoint_body("c2")}]}, format="json"
        ),
        lambda s: LangGraphCheckpoint.objects.filter(session=s, checkpoint_id="c2").exists(),
    ),
    WritePath(  # LangGraph's copy_thread writes its target
        "langgraph-thread-copy",
        "post",
        _langgraph_threads,
        lambda api: api.post(
            LANGGRAPH + "threads/copy/", {"source_thread_id": "t2", "target_thread_id": "t1"}, format="json"
        ),
        lambda s: LangGraphCheckpoint.objects.filter(session=s, checkpoint_id="c1").exists(),
    ),
    WritePath(
        "adk-event-list",
        "post",
        _adk_session,
        lambda api: api.post(ADK + "a1/events/", _adk_event("e2"), format="json"),
        lambda s: AdkEvent.objects.filter(session=s, event_id="e2").exists(),
    ),
    WritePath(  # ADK state: an event's session, app: and user: deltas
        "adk-event-list",
        "post",
        _adk_session,
        lambda api: api.post(
            ADK + "a1/events/",
            _adk_event("e3", {"city": "Paris", "app:units": "metric", "user:lang": "fr"}),
            format="json",
        ),
        lambda s: '"city"' in s.durable_state and AdkUserState.objects.filter(state__contains="lang").exists(),
    ),
    WritePath(
        "adk-session-create",
        "post",
        _adk_session,
        lambda api: api.post(ADK, {"session_id": "a2", "state": json.dumps({"k": 1})}, format="json"),
        lambda s: json.loads(s.durable_state) == {"k": 1},
        creates="a2",
    ),
]

# Write routes that store nothing retention could remove from a live session, with the reason.
NOT_WRITE_PATHS = {
    ("session-detail", "delete"): "deletes the session: nothing is left to keep",
    ("session-end", "post"): "the agent's own end, final by design; the delete rule counts from it",
    ("working-state", "delete"): "discards the working state: nothing is left to keep",
    ("adk-session-detail", "delete"): "deletes the session: nothing is left to keep",
    ("langgraph-thread-delete", "post"): "deletes the thread: nothing is left to keep",
    ("langgraph-prune", "post"): "removes checkpoints and writes, stores none",
    ("langgraph-runs-delete", "post"): "removes checkpoints and writes, stores none",
    ("user-datum", "put"): "user data: a different lifecycle, which retention never touches",
    ("store-batch", "post"): "memories: user data that expires by its own TTL, which retention never touches",
    ("user-datum", "delete"): "user data: a different lifecycle, which retention never touches",
    ("adk-artifact-list", "post"): "artifacts: user data kept apart from the session's rows; a session's go "
    "with it when retention deletes it, and the run's events that save them are its activity",
    ("adk-artifact-list", "delete"): "deletes an artifact: nothing is left to keep",
}


def _write_routes() -> set[tuple[str, str]]:
    """(route name, method) of every view under /api/v1/ that answers POST, PUT, PATCH or DELETE
    (/api/auth/ is Django's own log-in page for the browsable API, no agent state)."""
    found = set()
    for regex, pattern in api_routes(get_resolver().url_patterns):
        view = getattr(pattern.callback, "view_class", None) or getattr(pattern.callback, "cls", None)
        if regex.startswith("^api/v1/") and view is not None:
            found |= {(pattern.name, m) for m in ("post", "put", "patch", "delete") if hasattr(view, m)}
    return found


def test_every_write_route_is_checked_against_retention_or_excluded_with_a_reason():
    listed = {(path.route, path.method) for path in WRITE_PATHS}
    routes = _write_routes()
    assert not listed & set(NOT_WRITE_PATHS)
    unchecked = routes - listed - set(NOT_WRITE_PATHS)
    assert not unchecked, f"add a WritePath for each, or an exclusion with its reason: {sorted(unchecked)}"
    assert not (listed | set(NOT_WRITE_PATHS)) - routes, "the table names routes that are gone"


def _age(session: Session) -> None:
    """Nobody wrote to it for longer than both windows."""
    Session.objects.filter(pk=session.pk).update(updated_at=timezone.now() - IDLE_FOR)


def _cases():
    """Every write path; the quick loop writes through the first of each method, the slow set all."""
    ids = [f"{path.route}-{path.method}-{i}" for i, path in enumerate(WRITE_PATHS)]
    return first_of_each_kind(WRITE_PATHS, ids, lambda path: path.method)


def _session_written(path: WritePath, session: Session) -> Session:
    """The session the write went to, as stored now."""
    return Session.objects.get(session_id=path.creates) if path.creates else Session.objects.get(pk=session.pk)


@pytest.fixture
def policy(tenant):
    return services.retention_policy_save(tenant=tenant, end_idle_after_days=1, delete_ended_after_days=1)


@pytest.mark.parametrize("path", _cases())
def test_a_session_written_to_after_a_long_idle_time_survives_retention(api, tenant, policy, path):
    session = path.make(api)
    _age(session)

    response = path.write(api)
    assert response.status_code < 300, response.content
    services.retention_apply(tenant=tenant)

    written = _session_written(path, session)
    assert written.ended_at is None
    assert path.kept(written)


@pytest.mark.parametrize("path", _cases())
def test_a_write_reopens_a_session_retention_ended_and_it_survives_the_next_sweep(api, tenant, policy, path):
    session = path.make(api)
    _age(session)
    services.retention_apply(tenant=tenant)
    session.refresh_from_db()
    assert session.ended_at is not None and session.ended_by_retention
    # The end is older than the delete window: the next sweep would delete it but for the write.
    long_ago = timezone.now() - IDLE_FOR
    Session.objects.filter(pk=session.pk).update(ended_at=long_ago, updated_at=long_ago)

    response = path.write(api)
    assert response.status_code < 300, response.content
    services.retention_apply(tenant=tenant)

    written = _session_written(path, session)
    assert written.ended_at is None and not written.ended_by_retention
    assert path.kept(written)


def test_a_session_an_agent_ended_still_refuses_the_core_apis_writes(api, tenant, policy):
    session = _rest_session(api)
    _age(session)
    services.retention_apply(tenant=tenant)  # retention ends it first...
    assert api.post(REST + "end/").status_code == 200  # ...then the agent does: that end is final

    response = api.post(REST + "messages/", {"messages": [{"content": "late"}]}, format="json")

    assert response.status_code == 409 and response.json()["error"]["code"] == "session_ended"
    session.refresh_from_db()
    assert session.ended_at is not None and not session.ended_by_retention
    assert not Message.objects.filter(content="late").exists()


def test_an_adk_runner_holding_its_session_from_before_an_idle_end_appends_without_a_stale_error(api, tenant, policy):
    session = _adk_session(api)
    version = api.get(ADK + "a1/").json()["version"]
    _age(session)
    services.retention_apply(tenant=tenant)

    response = api.post(ADK + "a1/events/", {**_adk_event("e2"), "expected_version": version}, format="json")

    assert response.status_code == 201, response.content
    session.refresh_from_db()
    assert session.ended_at is None and session.version == version + 1
