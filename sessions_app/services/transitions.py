"""Agent hand-offs within a session."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agentstate.exceptions import InvalidInput
from agentstate.validation import clean_identifier, clean_json, clean_optional_label
from sessions_app.models import AgentTransition, Session
from sessions_app.services.live import update_live_session


def transition_record(
    *,
    session: Session,
    to_agent: str,
    from_agent: str = "",
    reason: str = "",
    metadata: dict[str, Any] | None = None,
) -> AgentTransition:
    """Record a hand-off between agents; an ended session takes no new activity."""
    if not isinstance(reason, str):
        raise InvalidInput.for_field("reason", "must be a string.")
    transition = AgentTransition(
        session=session,
        tenant_id=session.tenant_id,
        user_id=session.user_id,
        from_agent=clean_optional_label(from_agent, field="from_agent"),
        to_agent=clean_identifier(to_agent, field="to_agent"),
        reason=clean_json(reason, field="reason"),
        metadata=clean_json(metadata or {}, field="metadata", require_object=True),
    )
    with transaction.atomic():
        update_live_session(session)
        transition.save()
    return transition
