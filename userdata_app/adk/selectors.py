"""Reads of ADK's ``user:`` state, always within one tenant."""

from __future__ import annotations

from typing import Any

from agentstate.tenancy.models import Tenant
from sessions_app.adk.state import json_object
from userdata_app.adk.models import AdkEventUserDelta, AdkUserState


def adk_user_state_get(*, tenant: Tenant, app_name: str, user_id: str) -> dict[str, Any]:
    """The user's state in the app (keys without the prefix); empty when none was ever set."""
    return adk_user_states(tenant=tenant, app_name=app_name, user_ids=[user_id]).get(user_id, {})


def adk_user_states(*, tenant: Tenant, app_name: str, user_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Several users' states in the app, one query (a page of sessions of many users)."""
    rows = AdkUserState.objects.filter(tenant=tenant, app_name=app_name, user_id__in=set(user_ids))
    return {user_id: json_object(state) for user_id, state in rows.values_list("user_id", "state")}


def adk_event_user_deltas(*, session_pk: int, first_seq: int, last_seq: int) -> dict[int, dict[str, Any]]:
    """The user: deltas of a session's events ``first_seq..last_seq`` by event number."""
    rows = AdkEventUserDelta.objects.filter(session_pk=session_pk, event_seq__gte=first_seq, event_seq__lte=last_seq)
    return {seq: json_object(delta) for seq, delta in rows.values_list("event_seq", "delta")}


def adk_event_user_delta_count(*, session_pk: int, last_seq: int) -> int:
    """How many of a session's events ``1..last_seq`` have a user: delta (an erasure lowers it)."""
    return AdkEventUserDelta.objects.filter(session_pk=session_pk, event_seq__lte=last_seq).count()


def subject_adk_user_state_export(*, tenant: Tenant, user_id: str) -> list[dict[str, Any]]:
    """Per app: the user's state and each event's part of it (session by its primary key)."""
    deltas: dict[str, list[dict[str, Any]]] = {}
    for d in AdkEventUserDelta.objects.filter(tenant=tenant, user_id=user_id).order_by(
        "app_name", "session_pk", "event_seq"
    ):
        deltas.setdefault(d.app_name, []).append(
            {
                "session_pk": d.session_pk,
                "event_seq": d.event_seq,
                "delta": json_object(d.delta),
                "created_at": d.created_at.isoformat(),
            }
        )
    apps = {row.app_name: row for row in AdkUserState.objects.filter(tenant=tenant, user_id=user_id)}
    return [
        {
            "app_name": app_name,
            "state": json_object(apps[app_name].state) if app_name in apps else {},
            "updated_at": apps[app_name].updated_at.isoformat() if app_name in apps else None,
            "event_deltas": deltas.get(app_name, []),
        }
        for app_name in sorted(set(apps) | set(deltas))
    ]
