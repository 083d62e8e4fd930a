"""Erasure of one data subject's process state, asked for by userdata_app's erasure workflow."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from agentstate.tenancy.models import Tenant
from sessions_app import selectors, working_state
from sessions_app.models import (
    AdkEvent,
    AgentTransition,
    Checkpoint,
    LangGraphCheckpoint,
    LangGraphWrite,
    Message,
    MessagePop,
    Round,
    Session,
)
from sessions_app.services.live import working_state_clear_on_commit


@transaction.atomic
def subject_process_state_erase(*, tenant: Tenant, user_id: str, existed_at: datetime | None = None) -> dict[str, int]:
    """Delete every session of the subject (with ``existed_at``, those created at or before then:
    ``selectors.subject_sessions``) with its messages, rounds, checkpoints, transitions and working
    state (once the transaction commits); ADK's app state is about no person and stays. Returns
    counts per category. Called by
    userdata_app.erasure inside its transaction.

    The subject's session rows are locked first, so an append or round save that is running
    finishes before, and one that starts later finds the session gone. Bulk deletes: a fixed
    number of statements whatever the number of rows."""
    sessions = selectors.subject_sessions(tenant=tenant, user_id=user_id, existed_at=existed_at)
    session_pks = list(sessions.select_for_update().values_list("pk", flat=True))
    counts = {"working_state": working_state.get_store().count_many(session_pks)}
    working_state_clear_on_commit(session_pks)
    in_sessions = {"session_id__in": sessions.values("pk")}
    for category, model in (
        ("messages", Message),
        ("message_pops", MessagePop),
        ("rounds", Round),
        ("checkpoints", Checkpoint),
        ("transitions", AgentTransition),
        ("langgraph_checkpoints", LangGraphCheckpoint),
        ("langgraph_writes", LangGraphWrite),
        ("adk_events", AdkEvent),
    ):
        counts[category] = model.objects.filter(**in_sessions).delete()[0]
    counts["sessions"] = sessions.delete()[1].get(Session._meta.label, 0)
    return counts
