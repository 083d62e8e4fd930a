"""Writes to a live session's working state (the store itself is sessions_app.working_state)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agentstate.validation import clean_identifier, clean_json
from sessions_app import working_state
from sessions_app.models import Session
from sessions_app.services.live import lock_session, session_hold_check, update_live_session


@transaction.atomic
def working_state_patch(*, session: Session, changes: Any) -> dict[str, Any]:
    """Merge top-level keys into the working state (``None`` removes a key); returns the result.
    ``changes`` is checked here: a request body, it may be any JSON value."""
    changes = clean_json(changes, field="working_state", require_object=True)
    for key in changes:
        clean_identifier(key, field="working_state")
    update_live_session(session)
    return working_state.get_store().patch(session.pk, changes)


@transaction.atomic
def working_state_replace(*, session: Session, data: Any) -> dict[str, Any]:
    """Replace the whole working state with ``data``, checked here (any JSON value may come)."""
    data = clean_json(data, field="working_state", require_object=True)
    for key in data:
        clean_identifier(key, field="working_state")
    update_live_session(session)
    return working_state.get_store().replace(session.pk, data)


@transaction.atomic
def working_state_clear(*, session: Session) -> None:
    """Discard the working state; refused (``Held``) while a legal hold covers the session, its
    person or its tenant: a hold keeps a session with everything in it."""
    lock_session(session)
    session_hold_check(session, what="this session's working state")
    working_state.get_store().clear(session.pk)


def working_state_purge_expired() -> int:
    """Delete working state whose TTL has passed (the periodic sweep of the database store; Redis
    expires keys itself). Returns how many entries went."""
    return working_state.get_store().purge_expired()


def working_state_orphans_clear() -> int:
    """Delete the working state of sessions that are gone: a delete or an erasure clears it after
    its commit, and a process that died in between left it. Returns how many went."""
    return working_state.get_store().clear_orphans()
