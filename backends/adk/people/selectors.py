"""Reads of ADK's ``user:`` state, always within one tenant."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from django.db import connection

from agentstate import streaming
from agentstate.exceptions import NotFound
from agentstate.tenancy.models import Tenant
from backends.adk.people.models import AdkEventUserDelta, AdkUserState
from backends.adk.process.models import AdkAppState
from backends.adk.process.selectors import AdkSessionRead, adk_app_state_sql
from backends.adk.process.services import FRAMEWORK
from backends.adk.process.state import json_object
from sessions_app.selectors import session_get_with


def adk_user_state_get(*, tenant: Tenant, app_name: str, user_id: str) -> dict[str, Any]:
    """The user's state in the app (keys without the prefix); empty when none was ever set."""
    return adk_user_states(tenant=tenant, app_name=app_name, user_ids=[user_id]).get(user_id, {})


def adk_user_states(*, tenant: Tenant, app_name: str, user_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Several users' states in the app, one query (a page of sessions of many users)."""
    rows = AdkUserState.objects.filter(tenant=tenant, app_name=app_name, user_id__in=set(user_ids))
    return {user_id: json_object(state) for user_id, state in rows.values_list("user_id", "state")}


def adk_app_and_user_states(
    *, tenant: Tenant, app_name: str, user_ids: list[str]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The app's state and several users' states in it, in one query (a page of sessions): the
    app's row comes first, without a user id, each found by its unique index."""
    # Raw: benchmarks/frameworks.py ADK list_sessions per-call target; a page's app and users' states in one query
    users = sorted(set(user_ids))
    marks = ", ".join(["%s"] * len(users)) or "NULL"
    sql = (
        f'SELECT NULL, state FROM "{AdkAppState._meta.db_table}" WHERE tenant_id = %s AND app_name = %s '  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f'UNION ALL SELECT user_id, state FROM "{AdkUserState._meta.db_table}" '
        f"WHERE tenant_id = %s AND app_name = %s AND user_id IN ({marks})"
    )
    app_state: dict[str, Any] = {}
    user_states: dict[str, dict[str, Any]] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant.pk, app_name, tenant.pk, app_name, *users])
        for user_id, state in cursor.fetchall():
            if user_id is None:
                app_state = json_object(state)
            else:
                user_states[user_id] = json_object(state)
    return app_state, user_states


def adk_event_user_deltas(*, session_pk: int, first_seq: int, last_seq: int) -> dict[int, dict[str, Any]]:
    """The user: deltas of a session's events ``first_seq..last_seq`` by event number."""
    rows = AdkEventUserDelta.objects.filter(session_pk=session_pk, event_seq__gte=first_seq, event_seq__lte=last_seq)
    return {seq: json_object(delta) for seq, delta in rows.values_list("event_seq", "delta")}


def _states_sql(tenant: str, user_id: str, app_name: str) -> str:
    """Two columns: the app's state and the user's, each found by its unique index."""
    return (
        f"{adk_app_state_sql(tenant=tenant, app_name=app_name)}, "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f'(SELECT state FROM "{AdkUserState._meta.db_table}" '
        f"WHERE tenant_id = {tenant} AND user_id = {user_id} AND app_name = {app_name})"
    )


# Beside a session's row, in its query: its app's and user's state and, when asked, how many of
# its first events have a user: delta (on the deltas' index).
_STATES = _states_sql("s.tenant_id", "s.user_id", "s.app_name")
_STATES_OF = "SELECT " + _states_sql("%s", "%s", "%s")  # tenant, app; tenant, user, app
_DELTAS = (
    f'(SELECT COUNT(*) FROM "{AdkEventUserDelta._meta.db_table}" '  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
    f"WHERE session_pk = s.id AND event_seq <= COALESCE(%s, s.last_seq))"
)


def adk_states_get(*, tenant: Tenant, app_name: str, user_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The app's and the user's state, in one query."""
    # Raw: benchmarks/frameworks.py ADK get_session per-call target; the app's and the user's state in one query
    with connection.cursor() as cursor:
        cursor.execute(_STATES_OF, [tenant.pk, app_name, tenant.pk, user_id, app_name])
        return adk_states_of(cursor.fetchone())


# The app's and the user's state as columns over a session's row (``s``), for a query that reads
# them beside it (a create's insert); ``adk_states_of`` reads their values.
ADK_STATES_COLUMNS = _STATES


def adk_states_of(values: Sequence[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    app_state, user_state = values
    return json_object(app_state or ""), json_object(user_state or "")


def adk_session_read(
    *, tenant: Tenant, app_name: str, user_id: str, session_id: str, count_deltas: bool, through_seq: int | None = None
) -> AdkSessionRead:
    """One ADK session with its app's and user's state, in one query; ``count_deltas``: with how many
    of its events ``1..through_seq`` (default: all) have a user: delta, read with the session's row
    (an erasure after it lowers the count a later read finds)."""
    session, extra = session_get_with(
        tenant=tenant,
        user_id=user_id,
        session_id=session_id,
        app_name=app_name,
        columns=f"{_STATES}, {_DELTAS}" if count_deltas else _STATES,
        params=[through_seq] if count_deltas else [],
    )
    if session.framework != FRAMEWORK:
        raise NotFound("Session not found.")
    return AdkSessionRead(
        session=session,
        app_state=json_object(extra[0] or ""),
        user_state=json_object(extra[1] or ""),
        user_deltas=extra[2] if count_deltas else None,
    )


def subject_adk_user_state_export(*, tenant: Tenant, user_id: str) -> Iterator[dict[str, Any]]:
    """Per app: the user's state and each event's part of it (session by its primary key), those
    read in batches bounded by bytes (``agentstate.streaming``) as the export is written."""
    deltas = AdkEventUserDelta.objects.filter(tenant=tenant, user_id=user_id)
    apps = {row.app_name: row for row in AdkUserState.objects.filter(tenant=tenant, user_id=user_id)}
    for app_name in sorted(set(apps) | set(deltas.order_by().values_list("app_name", flat=True).distinct())):
        of_app = deltas.filter(app_name=app_name).order_by("session_pk", "event_seq")
        yield {
            "app_name": app_name,
            "state": json_object(apps[app_name].state) if app_name in apps else {},
            "updated_at": apps[app_name].updated_at.isoformat() if app_name in apps else None,
            "event_deltas": map(
                _delta_data, streaming.rows_in_batches(of_app, size=streaming.stored_size(AdkEventUserDelta, "delta"))
            ),
        }


def _delta_data(d: AdkEventUserDelta) -> dict[str, Any]:
    return {
        "session_pk": d.session_pk,
        "event_seq": d.event_seq,
        "delta": json_object(d.delta),
        "created_at": d.created_at.isoformat(),
    }
