"""Round snapshots: save (automatic ``max + 1`` or a given id) and delete."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from agentstate.exceptions import InvalidInput, NotFound, PreconditionFailed
from agentstate.tenancy.models import Tenant
from agentstate.validation import ROUND_ID_MAX, clean_identifier, clean_json, clean_round_id
from sessions_app import selectors
from sessions_app.models import Round, Session
from sessions_app.services.live import (
    activity_update_sql,
    session_get_or_create,
    session_hold_check,
    session_touch,
    update_live_session,
)


def round_save(
    *,
    tenant: Tenant,
    user_id: str,
    state: dict[str, Any],
    session_id: str | None = None,
    round_id: int | None = None,
    expected_version: int | None = None,
) -> Round:
    """Save a state snapshot (the AgentScope ``save_state``): the session is created when
    missing (``session_id or "default"``); no ``round_id`` appends ``max + 1`` (or 1); a given
    ``round_id`` overwrites that round, and with ``expected_version`` only if it is unchanged."""
    user_id = clean_identifier(user_id, field="user_id")
    session_id = clean_identifier(session_id or selectors.DEFAULT_SESSION_ID, field="session_id")
    state = clean_json(state, field="state", require_object=True)
    if round_id is not None:
        round_id = clean_round_id(round_id)
    if round_id is None and expected_version is None and connection.vendor == "postgresql":
        saved = _round_append_postgresql(tenant=tenant, user_id=user_id, session_id=session_id, state=state)
        if saved is not None:
            return saved
    return _round_save_locked(
        tenant=tenant,
        user_id=user_id,
        state=state,
        session_id=session_id,
        round_id=round_id,
        expected_version=expected_version,
    )


def _round_append_postgresql(*, tenant: Tenant, user_id: str, session_id: str, state: dict[str, Any]) -> Round | None:
    """The automatic round of a live session in one statement, atomic by itself: one round trip
    instead of SELECT, BEGIN, UPDATE, INSERT, COMMIT. None when the session is missing, ended or
    out of ids: the portable path then creates it or says why not."""
    # Raw: benchmarks/scaling.py save auto round ratio ≤ 1.3: one statement for five round trips
    now = timezone.now()
    quote = connection.ops.quote_name
    update = activity_update_sql(
        sets="last_round_id = last_round_id + 1",
        where="tenant_id = %s AND user_id = %s AND session_id = %s AND app_name = '' AND last_round_id < %s",
        returning="id, last_round_id",
    )
    sql = (
        f"WITH s AS ({update}) "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"INSERT INTO {quote(Round._meta.db_table)} "
        f"(session_id, tenant_id, user_id, round_id, state, created_at, updated_at, version) "
        f"SELECT s.id, %s, %s, s.last_round_id, %s, %s, %s, 1 FROM s RETURNING id, session_id, round_id"
    )
    state_db = Round._meta.get_field("state").get_db_prep_save(state, connection)
    with connection.cursor() as cursor:
        cursor.execute(sql, [now, tenant.pk, user_id, session_id, ROUND_ID_MAX, tenant.pk, user_id, state_db, now, now])
        row = cursor.fetchone()
    if row is None:
        return None
    saved = Round(
        id=row[0],
        session_id=row[1],
        tenant=tenant,
        user_id=user_id,
        round_id=row[2],
        state=state,
        created_at=now,
        updated_at=now,
        version=1,
    )
    saved._state.adding, saved._state.db = False, connection.alias
    return saved


@transaction.atomic
def _round_save_locked(
    *,
    tenant: Tenant,
    user_id: str,
    state: dict[str, Any],
    session_id: str,
    round_id: int | None,
    expected_version: int | None,
) -> Round:
    session = session_get_or_create(tenant=tenant, user_id=user_id, session_id=session_id)
    now = timezone.now()

    def created(new_id: int) -> Round:
        return Round.objects.create(
            session=session,
            tenant=tenant,
            user_id=user_id,
            round_id=new_id,
            state=state,
            created_at=now,
            updated_at=now,
        )

    if round_id is None:
        if expected_version is not None:
            raise PreconditionFailed("If-Match needs an existing round: give its round_id.")
        new_id = update_live_session(session, "last_round_id = last_round_id + 1", returning="last_round_id")
        if new_id > 2**31 - 1:
            raise InvalidInput.for_field("round_id", "no automatic round id is left above the largest one.")
        return created(new_id)
    update_live_session(
        session,
        "last_round_id = CASE WHEN last_round_id < %s THEN %s ELSE last_round_id END",
        [round_id, round_id],
        "last_round_id",
    )
    existing = Round.objects.filter(session=session, round_id=round_id).first()
    if expected_version is not None and (existing is None or existing.version != expected_version):
        raise PreconditionFailed("The round changed since you read it (If-Match does not match).")
    if existing is None:
        return created(round_id)
    existing.state, existing.updated_at, existing.version = state, now, existing.version + 1
    existing.save(update_fields=["state", "updated_at", "version"])
    return existing


@transaction.atomic
def round_delete(*, session: Session, round_id: int) -> None:
    """Delete one round; the next automatic id stays ``max(remaining) + 1``."""
    locked = session_touch(session)
    session_hold_check(session, what="this session's rounds")
    deleted, _ = Round.objects.filter(session=session, round_id=round_id).delete()
    if not deleted:
        raise NotFound(f"Round {round_id} not found.")
    if round_id >= locked.last_round_id:
        remaining = Round.objects.filter(session=session).aggregate(top=Max("round_id"))["top"] or 0
        Session.objects.filter(pk=session.pk).update(last_round_id=remaining)
