"""Rows of a session carry their owner (SessionOwned) with no database constraint on its tenant: the
tenant's deletion must still take every one of them, since the database no longer refuses it."""

import base64
import json

from django.apps import apps

from backends.adk.process import services as adk
from backends.langgraph.process import services as langgraph
from sessions_app import services
from sessions_app.models import Session, SessionOwned


def _typed(text):
    return {"type": "json", "data": base64.b64encode(json.dumps(text).encode()).decode()}


def _one_row_of_each_kind(tenant):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="chat")
    services.message_append(session=session, messages=[{"role": "user", "content": "a"}, {"content": "b"}])
    services.message_pop(session=session, idempotency_key="k1")
    services.round_save(tenant=tenant, user_id="u1", session_id="chat", state={"step": 1})
    services.checkpoint_create(session=session, label="done", state={"step": 1})
    services.transition_record(session=session, from_agent="planner", to_agent="writer")
    services.run_usage_record(session=session, total_tokens=3)
    services.session_fork(session=session, new_session_id="fork")
    key = {"tenant": tenant, "thread_id": "t1", "user_id": None, "default_user_id": "u1", "checkpoint_ns": ""}
    langgraph.checkpoint_put(
        **key,
        checkpoint_id="c1",
        parent_checkpoint_id=None,
        checkpoint=_typed("c1"),
        metadata={"step": 0},
        channel_versions={"messages": 1},
        channel_values=[{"channel": "messages", **_typed("v1")}],
    )
    langgraph.writes_put(
        **key,
        checkpoint_id="c1",
        task_id="task",
        task_path="",
        replace=False,
        writes=[{"idx": 0, "channel": "messages", "value": _typed("w1")}],
    )
    adk.adk_session_create(tenant=tenant, app_name="travel", user_id="u1", session_id="a1", state={})
    event = {"id": "e1", "author": "user", "timestamp": 1.0, "content": {"parts": [{"text": "hi"}]}}
    adk.adk_event_append(tenant=tenant, app_name="travel", user_id="u1", session_id="a1", event=event)


def test_deleting_a_tenant_leaves_no_row_of_its_sessions(tenant, other_tenant):
    session_owned = [m for m in apps.get_models() if issubclass(m, SessionOwned)]
    _one_row_of_each_kind(tenant)
    _one_row_of_each_kind(other_tenant)
    # Each kind of row is there to be deleted (a new session-owned model needs a row above).
    assert {m._meta.label: m.objects.filter(tenant=tenant).exists() for m in session_owned} == {
        m._meta.label: True for m in session_owned
    }

    deleted = tenant.pk
    tenant.delete()

    assert {m._meta.label: m.objects.filter(tenant_id=deleted).count() for m in session_owned} == {
        m._meta.label: 0 for m in session_owned
    }
    assert not Session.objects.filter(tenant_id=deleted).exists()
    # The other tenant's rows are untouched.
    assert all(m.objects.filter(tenant=other_tenant).exists() for m in session_owned)
