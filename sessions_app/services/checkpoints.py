"""Labelled checkpoints, promoted from working state or given directly."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agentstate.exceptions import InvalidInput
from agentstate.validation import clean_identifier, clean_json
from sessions_app import selectors
from sessions_app.models import Checkpoint, Session
from sessions_app.services.live import session_touch


def checkpoint_create(
    *,
    session: Session,
    label: str,
    include_keys: list[str] | None = None,
    state: dict[str, Any] | None = None,
) -> Checkpoint:
    """Promote working state (all keys, or ``include_keys``; missing keys skipped) or a given
    state to a labelled checkpoint."""
    label = clean_identifier(label, field="label")
    if include_keys is not None and not isinstance(include_keys, list):
        raise InvalidInput.for_field("include_keys", "must be a list of keys.")
    if state is not None and include_keys:
        raise InvalidInput.for_field("include_keys", "give either state or include_keys, not both.")
    if state is None:
        current = selectors.working_state_get(session=session)
        if include_keys:
            keys = [clean_identifier(key, field="include_keys") for key in include_keys]
            state = {key: current[key] for key in keys if key in current}
        else:
            state = dict(current)
    else:
        state = clean_json(state, field="state", require_object=True)
    with transaction.atomic():
        # The row lock orders the insert with a delete or erasure of the session: one that won
        # makes this a clean NotFound instead of a foreign-key error at commit.
        session_touch(session)
        return Checkpoint.objects.create(
            session=session, tenant_id=session.tenant_id, user_id=session.user_id, label=label, state=state
        )
