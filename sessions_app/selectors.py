"""Reads of process state. Every function takes the caller's tenant (or an object already
fetched through it), so nothing outside the tenant is reachable; each query is index-served."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from agentstate.exceptions import NotFound
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier
from sessions_app import working_state
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session

DEFAULT_SESSION_ID = "default"


def session_get(*, tenant: Tenant, user_id: str, session_id: str) -> Session:
    """One session by its identity; anything outside the tenant is simply not found."""
    session = Session.objects.filter(tenant=tenant, user_id=user_id, session_id=session_id).first()
    if session is None:
        raise NotFound("Session not found.")
    return session


def session_list(
    *,
    tenant: Tenant,
    user_id: str | None = None,
    agent_id: str | None = None,
    workspace_id: str | None = None,
    ended: bool | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
) -> QuerySet[Session]:
    """A tenant's sessions in the stable cursor order ``(created_at, id)``, without messages."""
    sessions = Session.objects.filter(tenant=tenant)
    if user_id is not None:
        sessions = sessions.filter(user_id=user_id)
    if agent_id is not None:
        sessions = sessions.filter(agent_id=agent_id)
    if workspace_id is not None:
        sessions = sessions.filter(workspace_id=workspace_id)
    if ended is not None:
        sessions = sessions.filter(ended_at__isnull=not ended)
    if created_after is not None:
        sessions = sessions.filter(created_at__gte=created_after)
    if created_before is not None:
        sessions = sessions.filter(created_at__lt=created_before)
    if updated_after is not None:
        sessions = sessions.filter(updated_at__gte=updated_after)
    if updated_before is not None:
        sessions = sessions.filter(updated_at__lt=updated_before)
    return sessions.order_by("created_at", "id")


def message_list(*, session: Session, after_seq: int | None = None, role: str | None = None) -> QuerySet[Message]:
    """History in order, optionally after a sequence number and of one role."""
    messages = Message.objects.filter(session=session)
    if after_seq is not None:
        messages = messages.filter(seq__gt=after_seq)
    if role is not None:
        messages = messages.filter(role=role)
    return messages.order_by("seq")


def message_recent(*, session: Session, limit: int, role: str | None = None) -> list[Message]:
    """The most recent ``limit`` messages, oldest first."""
    messages = Message.objects.filter(session=session)
    if role is not None:
        messages = messages.filter(role=role)
    return list(reversed(messages.order_by("-seq")[:limit]))


def _rounds_of(*, tenant: Tenant, user_id: str, session_id: str | None) -> QuerySet[Round]:
    return Round.objects.filter(
        session__tenant=tenant,
        session__user_id=user_id,
        session__session_id=session_id or DEFAULT_SESSION_ID,
    )


def round_get(*, tenant: Tenant, user_id: str, session_id: str | None = None, round_id: int | None = None) -> Round:
    """The given round, or the latest one (largest ``round_id``, not the last written)."""
    rounds = _rounds_of(tenant=tenant, user_id=user_id, session_id=session_id)
    found = rounds.filter(round_id=round_id).first() if round_id is not None else rounds.order_by("-round_id").first()
    if found is None:
        raise NotFound("Round not found." if round_id is not None else "The session has no rounds.")
    return found


def round_export(
    *, tenant: Tenant, user_id: str, session_id: str | None = None, round_id: int | None = None
) -> dict[str, Any] | None:
    """The AgentScope ``export_state``: a round's state, the latest when no id is given, or None."""
    try:
        return round_get(tenant=tenant, user_id=user_id, session_id=session_id, round_id=round_id).state
    except NotFound:
        return None


def round_list(*, session: Session) -> QuerySet[Round]:
    """A session's rounds in id order, without their state."""
    return Round.objects.filter(session=session).order_by("round_id").defer("state")


def checkpoint_latest(*, session: Session, label: str) -> Checkpoint:
    """The newest checkpoint with ``label`` (insertion order breaks ties)."""
    checkpoint = Checkpoint.objects.filter(session=session, label=clean_identifier(label, field="label")).order_by("-id").first()
    if checkpoint is None:
        raise NotFound(f"No checkpoint labelled {label!r}.")
    return checkpoint


def checkpoint_list(*, session: Session) -> QuerySet[Checkpoint]:
    """A session's checkpoints (id, label, time) in insertion order."""
    return Checkpoint.objects.filter(session=session).order_by("id").only("id", "label", "created_at", "session_id")


@dataclass(frozen=True)
class RestoredSession:
    session: Session
    checkpoints: list[Checkpoint]
    working_state: dict[str, Any]


def session_restore(*, tenant: Tenant, user_id: str, session_id: str) -> RestoredSession:
    """What survives a session: its checkpoints, and working state only while it is live
    (empty once ended, as in the three-categories seed)."""
    session = session_get(tenant=tenant, user_id=user_id, session_id=session_id)
    return RestoredSession(
        session=session,
        checkpoints=list(Checkpoint.objects.filter(session=session).order_by("id")),
        working_state=working_state_get(session=session),
    )


def working_state_get(*, session: Session) -> dict[str, Any]:
    """A live session's working state; an ended session has none."""
    if session.ended_at is not None:
        return {}
    return working_state.get_store().get(session.pk)


def transition_list(*, session: Session) -> QuerySet[AgentTransition]:
    """A session's agent hand-offs in the order they were recorded."""
    return AgentTransition.objects.filter(session=session).order_by("id")
