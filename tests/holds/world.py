"""One person's data in every shape a destructive call reaches, and what a hold test compares."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import Group, User

from backends.adk.people.artifacts.models import Artifact
from backends.adk.process.models import AdkEvent
from backends.langgraph.process.models import LangGraphBlob, LangGraphCheckpoint
from sessions_app import services as session_services
from sessions_app import working_state
from sessions_app.models import Message, Round, Session
from tests.userdata_app.erasure_factories import verified_request
from userdata_app.access_log.models import AccessPolicy
from userdata_app.memory.models import MemoryItem
from userdata_app.models import UserDatum

S = "/api/v1/users/u1/sessions/s1/"
ADK = "/api/v1/adk/apps/app/users/u1/sessions/"
ARTIFACTS = "/api/v1/adk/apps/app/users/u1/artifacts/"
THREAD = {"thread_id": "t1", "default_user_id": "u1", "checkpoint_ns": ""}
TYPED_VALUE = {"type": "json", "data": "e30=", "rendered": {}}
# An ADK event whose state delta holds a user: key: that part is user data hanging off its session.
PENDING_WRITE = {"idx": 0, "channel": "c", "value": TYPED_VALUE}
EVENT = {"id": "e1", "author": "user", "timestamp": 1.0, "actions": {"state_delta": {"user:city": "Paris", "k": 1}}}


def checkpoint(checkpoint_id: str, run_id: str = "r1") -> dict[str, Any]:
    """A checkpoint of t1 whose step changed a channel: its value stored apart, at a version of its own."""
    return {
        **THREAD,
        "checkpoint_id": checkpoint_id,
        "checkpoint": TYPED_VALUE,
        "metadata": {"run_id": run_id},
        "channel_versions": {"messages": checkpoint_id},
        "channel_values": [{"channel": "messages", "type": "json", "data": "e30="}],
    }


def build(api) -> None:
    """u1 of acme: a session s1 with messages, rounds and working state, an ADK session a1, a
    LangGraph thread t1 of run r1 (two checkpoints, each with a channel value), a user datum, a
    memory item, and an event (with a ``user:`` delta) and an artifact of a1; every call through
    the API, as an agent makes them."""
    for response in (
        api.post("/api/v1/sessions/", {"user_id": "u1", "session_id": "s1"}, format="json"),
        api.post(S + "messages/", {"messages": [{"content": c} for c in "abc"]}, format="json"),
        api.post(S + "rounds/", {"state": {"r": 1}}, format="json"),
        api.post(S + "rounds/", {"state": {"r": 2}}, format="json"),
        api.put(S + "working-state/", {"task": "t"}, format="json"),
        api.post(ADK, {"session_id": "a1", "state": "{}"}, format="json"),
        api.post(ADK + "a1/events/", {"event": json.dumps(EVENT)}, format="json"),
        api.post("/api/v1/langgraph/checkpoints/", checkpoint("c1"), format="json"),
        api.post("/api/v1/langgraph/checkpoints/", checkpoint("c2"), format="json"),
        api.put("/api/v1/users/u1/data/email/", {"value": "me@example.com"}, format="json"),
        api.post(ARTIFACTS, {"filename": "note.txt", "session_id": "a1", "artifact": {"text": "hi"}}, format="json"),
        api.post(
            "/api/v1/store/batch/",
            {"ops": [{"op": "put", "namespace": ["users", "u1", "prefs"], "key": "k", "value": {"a": 1}}]},
            format="json",
        ),
    ):
        assert response.status_code in (200, 201), (response.status_code, response.content[:300])


def rows() -> dict[str, int]:
    """Every table a destructive call can shrink, counted, and the sessions' working state."""
    models = (Session, Message, Round, AdkEvent, LangGraphCheckpoint, LangGraphBlob, UserDatum, MemoryItem, Artifact)
    counted = {model.__name__: model.objects.count() for model in models}
    sessions = list(Session.objects.values_list("pk", flat=True))
    return {**counted, "working_state": working_state.get_store().count_many(sessions)}


def scenario(api, tenant, actor) -> None:
    """u1's data in every declared category (``build`` and the rest through the API), a verified
    erasure request for u1 (the admin's execute), and a row of every admin's model that can be
    deleted (a retention and an access policy, a group, another staff login)."""
    build(api)
    for path, body in (
        (S + "messages/pop/", {"idempotency_key": "p1"}),
        (S + "checkpoints/", {"label": "done"}),
        (S + "transitions/", {"to_agent": "writer"}),
        (S + "usage/", {"total_tokens": 3}),
        (
            "/api/v1/langgraph/writes/",
            {**THREAD, "checkpoint_id": "c2", "task_id": "t", "writes": [PENDING_WRITE]},
        ),
    ):
        response = api.post(path, body, format="json")
        assert response.status_code in (200, 201, 204), (path, response.content[:300])
    verified_request(subjects=[(tenant, "u1")], scope="everything")
    session_services.retention_policy_save(tenant=tenant, delete_ended_after_days=1)
    AccessPolicy.objects.create(tenant=tenant)
    Group.objects.create(name="auditors")
    User.objects.create_user("another", is_staff=True)
