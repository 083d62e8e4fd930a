"""Writes of ADK's ``user:`` state: one user's state per app, and each event's part of it."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from agentstate.statements import execute_all, prepared_cursor
from agentstate.subjects import USER_DATA, subject_write_check
from agentstate.tenancy.models import Tenant
from backends.adk.people.models import AdkEventUserDelta, AdkUserState
from backends.adk.process.state import json_object, json_text


@transaction.atomic(savepoint=False)  # a failure rolls back the caller's whole transaction anyway
def adk_user_state_update(
    *,
    tenant: Tenant,
    app_name: str,
    user_id: str,
    delta: dict[str, Any],
    session_pk: int | None = None,
    event_seq: int | None = None,
) -> None:
    """dict.update() of the user's state in the app, under its row lock; with an event
    (``session_pk``, ``event_seq``) the delta is also kept as that event's, so the event reads back
    whole until the user's data is erased. After the erasure guard, two round trips on PostgreSQL:
    the row locked (created when missing) as it is read, then its update with the event's delta."""
    if session_pk is not None and event_seq is None:
        raise TypeError("an event's delta needs the event's event_seq")
    subject_write_check(tenant=tenant, user_id=user_id, category=USER_DATA)
    row_pk, state_text = _locked_state(tenant=tenant, app_name=app_name, user_id=user_id)
    state = json_object(state_text)
    state.update(delta)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    quote = connection.ops.quote_name
    statements = [
        (
            f"UPDATE {quote(AdkUserState._meta.db_table)} SET state = %s, updated_at = %s WHERE id = %s",  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
            [json_text(state), now, row_pk],
        )
    ]
    if session_pk is not None:
        statements.append(
            (
                f"INSERT INTO {quote(AdkEventUserDelta._meta.db_table)} "  # noqa: S608 (as above)
                "(tenant_id, user_id, app_name, session_pk, event_seq, delta, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [tenant.pk, user_id, app_name, session_pk, event_seq, json_text(delta), now],
            )
        )
    execute_all(*statements)


def _locked_state(*, tenant: Tenant, app_name: str, user_id: str) -> tuple[int, str]:
    """Inside a transaction: the primary key and state of the user's row in the app, under its row
    lock; a missing row is created empty. On PostgreSQL one statement: an insert that, on the
    unique (tenant, user, app), locks the row it met and returns its latest state."""
    # Raw: benchmarks/frameworks.py ADK append_event (user: state delta) target; insert-or-lock in one statement
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(AdkUserState._meta.db_table)
        with prepared_cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} AS u (tenant_id, user_id, app_name, state, updated_at) "  # noqa: S608 (a quoted table name; values are parameters)
                "VALUES (%s, %s, %s, '{}', %s) ON CONFLICT (tenant_id, user_id, app_name) "
                "DO UPDATE SET state = u.state RETURNING id, state",
                [tenant.pk, user_id, app_name, connection.ops.adapt_datetimefield_value(timezone.now())],
            )
            return cursor.fetchone()
    rows = AdkUserState.objects.select_for_update().filter(tenant=tenant, app_name=app_name, user_id=user_id)
    row = rows.first()
    if row is None:
        try:
            with transaction.atomic():
                row = AdkUserState.objects.create(tenant=tenant, app_name=app_name, user_id=user_id, state="{}")
        except IntegrityError:  # created meanwhile by another writer
            row = rows.get()
    return row.pk, row.state
