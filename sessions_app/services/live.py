"""Building blocks the process-state services share: the session's row lock, the one-statement
"touch a live session" update, and the rules for a missing, ended or stale session.

Every write through any API is activity (DESIGN.md): it moves the session's ``updated_at`` in its
own transaction, under the row lock, so retention (which re-checks under that lock) never ends or
deletes a session a write has just reached."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import datetime
from functools import lru_cache, partial
from typing import Any, NoReturn

from django.db import IntegrityError, connection, transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from agentstate.exceptions import NotFound, PreconditionFailed, SessionEnded
from agentstate.holds.models import LegalHold
from agentstate.holds.services import hold_applying, hold_check, holds_lock, holds_lock_key, holds_lock_required
from agentstate.subject_data import rows_held
from agentstate.subjects import PROCESS_STATE, subject_write_check
from agentstate.tenancy.models import Tenant
from sessions_app import working_state
from sessions_app.models import Session

STALE_SESSION = "The session changed since you read it (If-Match does not match)."
logger = logging.getLogger(__name__)
# Set when the store refused a clear after a commit (working_state_clear_on_commit), until taken.
_clear_refused: ContextVar[bool] = ContextVar("agentstate_working_state_clear_refused", default=False)


def check_version(current: Session, expected_version: int | None) -> None:
    if expected_version is not None and current.version != expected_version:
        raise PreconditionFailed(STALE_SESSION)


def session_get_or_create(*, tenant: Tenant, user_id: str, session_id: str) -> Session:
    """Inside a transaction: the REST API's session, created when missing (savepoint keeps the
    outer transaction usable if a concurrent create wins)."""
    session = Session.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id, app_name="").first()
    if session is not None:
        return session
    subject_write_check(tenant=tenant, user_id=user_id, category=PROCESS_STATE)
    try:
        with transaction.atomic():
            return Session.objects.create(tenant=tenant, user_id=user_id, session_id=session_id)
    except IntegrityError:
        return Session.objects.get(tenant=tenant, user_id=user_id, session_id=session_id, app_name="")


# A write reopens a session retention ended for idleness (a framework's graph or runner must not
# break after an idle day); a session an agent ended stays ended.
_REOPEN_IF_RETENTION_ENDED = (
    "ended_at = CASE WHEN ended_by_retention THEN NULL ELSE ended_at END, ended_by_retention = false"
)
_WRITABLE = "(ended_at IS NULL OR ended_by_retention)"


@lru_cache(maxsize=512)  # a hot path's few shapes, built once (the build costs several times the lookup)
def activity_update_sql(
    *, where: str, sets: str = "", returning: str = "id", writable: bool = True, time: str = "%s"
) -> str:
    """The one ``UPDATE`` of a session's row every hand-written write sends, the core's and every
    backend's: ``UPDATE session SET <sets>, updated_at = <time>, <a retention end undone> WHERE
    (<where>) AND <writable> RETURNING <returning>``. It takes the row lock and records the activity
    in the round trip the write sends anyway (a caller may embed it as ``WITH s AS (...)``).

    Its parameters in order: those of ``sets``, the activity time (``activity_time()``, or the
    name ``time`` gives, e.g. ``%(now)s``), those of ``where`` and ``returning``. ``writable=False``
    for a write whose caller decides on an ended session itself (it reads the row it locked)."""
    table = connection.ops.quote_name(Session._meta.db_table)
    sets = f"{sets}, " if sets else ""
    live = f" AND {_WRITABLE}" if writable else ""
    return (
        f"UPDATE {table} SET {sets}updated_at = {time}, {_REOPEN_IF_RETENTION_ENDED} "  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
        f"WHERE ({where}){live} RETURNING {returning}"
    )


def activity_time() -> Any:
    """The activity time as ``activity_update_sql``'s parameter: now, as the database stores it."""
    return connection.ops.adapt_datetimefield_value(timezone.now())


def update_live_session(
    session: Session, assignments: str = "", params: Sequence[Any] = (), returning: str = "id"
) -> Any:
    """Run ``activity_update_sql`` on the session, live: one round trip that locks the row and
    records the activity (a session retention ended is reopened), with ``assignments`` (and their
    ``params``) set too. Returns ``returning``'s value; raises if an agent ended the session or it
    is gone."""
    # Raw: benchmarks/frameworks.py per-call targets: the lock and the activity in one UPDATE … RETURNING
    sql = activity_update_sql(where="id = %s", sets=assignments, returning=returning)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, activity_time(), session.pk])
        row = cursor.fetchone()
    if row is None:
        raise_not_live(session)
    return row[0]


def lock_session(session: Session) -> Session:
    """Take the session's row lock (SELECT ... FOR UPDATE) and return its current row. For a lock
    that is not a write (end, delete, a fork's source); a write takes ``session_touch``."""
    locked = Session.objects.select_for_update().filter(pk=session.pk).first()
    if locked is None:
        raise NotFound("Session not found.")
    return locked


def activity_changes(now: datetime | None = None) -> dict[str, Any]:
    """The ORM form of what every write sets (``activity_update_sql``'s SET): the activity time
    (``now``, or the time it is called), and a retention end undone."""
    return {
        "updated_at": now or timezone.now(),
        "ended_at": Case(When(ended_by_retention=True, then=Value(None)), default=F("ended_at")),
        "ended_by_retention": False,
    }


def session_touch(session: Session, *, holds_lock_shared: bool = False) -> Session:
    """Inside a transaction: take the session's row lock for a write whose rules need the row, and
    record the activity (``updated_at`` now, a session retention ended reopened), in one
    ``UPDATE ... RETURNING``; returns the row as it is now. Whether an ended session takes the
    write stays the caller's rule. With ``holds_lock_shared`` (a write that deletes) the same
    statement then takes the tenant's hold lock shared (PostgreSQL; ``holds_lock``), so the hold
    check, in a later statement, sees every hold placed before."""
    # Raw: benchmarks/frameworks.py per-call targets: the lock and the activity in one UPDATE … RETURNING
    params: list[Any] = [activity_time(), session.pk]
    returning = "*"
    if holds_lock_shared:
        holds_lock_required()
    if holds_lock_shared and connection.vendor == "postgresql":
        returning += ", pg_advisory_xact_lock_shared(%s) AS holds_locked"
        params.append(holds_lock_key(session.tenant_id))
    sql = activity_update_sql(where="id = %s", returning=returning, writable=False)
    touched = next(iter(Session.objects.raw(sql, params)), None)
    if touched is None:
        raise NotFound("Session not found.")
    return touched


ENDED = "The session has ended; it accepts no new messages, rounds or working state."


def raise_not_live(session: Session) -> NoReturn:
    if Session.objects.filter(pk=session.pk).exists():
        raise SessionEnded(ENDED)
    raise NotFound("Session not found.")


def refuse_if_ended(locked: Session) -> None:
    """``activity_update_sql``'s rule for a row read under its lock before the write: a session an
    agent ended refuses it (409); one retention ended takes it, and the write reopens it."""
    if locked.ended_at is not None and not locked.ended_by_retention:
        raise SessionEnded(ENDED)


def session_hold_check(session: Session, *, what: str = "this session") -> None:
    """Inside the transaction that deletes rows of the session, before it does: refuse (``Held``)
    while a legal hold covers the session, its person or its tenant."""
    hold_check(tenant_pk=session.tenant_id, user_id=session.user_id, session_pk=session.pk, what=what)


def session_held(session: Session) -> LegalHold | None:
    """``session_hold_check`` for a write that keeps what a hold covers rather than refusing."""
    return hold_applying(tenant_pk=session.tenant_id, user_id=session.user_id, session_pk=session.pk)


def sessions_hold_check(*, tenant: Tenant, session_pks: list[int], what: str) -> None:
    """``session_hold_check`` for many sessions of a tenant: one query while none is held."""
    holds_lock(tenant_pk=tenant.pk, exclusive=False)
    first_held = Session.objects.filter(pk__in=session_pks).filter(rows_held(Session)).order_by("pk").first()
    if first_held is not None:
        session_hold_check(first_held, what=what)


def working_state_clear_on_commit(session_pks: list[int]) -> None:
    """Discard these sessions' working state once the transaction that ends, deletes or erases
    them commits, never before: a rollback (a database error, an erasure's residue check) must
    leave the working state as it was, and the store is outside the database's transaction.

    Nothing can write it back in between: a working-state write takes the session's row lock
    (``update_live_session``) and writes the store before its own commit, so it either finished
    before this transaction locked the row, or it waits and then finds the session ended or gone.

    The commit keeps its answer if the store then refuses (Redis down): the entries stay until
    ``erasure_storage_cleanup`` sweeps those of sessions that are gone (or their TTL ends them), and
    ``working_state_clear_refused`` tells the caller that needs to say so (an erasure's note).
    """
    if session_pks:
        _clear_refused.set(False)  # what an earlier transaction left is not this one's
        transaction.on_commit(partial(_clear_after_commit, list(session_pks)))


def _clear_after_commit(session_pks: list[int]) -> None:
    try:
        working_state.get_store().clear_many(session_pks)
    except Exception:  # the commit stands whatever the store says: never a failure after it
        _clear_refused.set(True)
        logger.warning(
            "working state of %d ended, deleted or erased sessions not cleared (store unavailable): "
            "erasure_storage_cleanup sweeps it",
            len(session_pks),
            exc_info=True,
        )


def working_state_clear_refused() -> bool:
    """Whether the store refused the last clear after a commit in this context; reads it once
    (the answer goes with the commit that asked)."""
    refused = _clear_refused.get()
    _clear_refused.set(False)
    return refused
