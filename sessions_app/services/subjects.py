"""Erasure of one data subject's process state, asked for by userdata_app's erasure workflow."""
from __future__ import annotations

from django.db import transaction

from agentstate.tenancy.models import Tenant
from sessions_app import working_state
from sessions_app.models import AdkEvent, AgentTransition, Checkpoint, Message, Round, Session

@transaction.atomic
def subject_process_state_erase(*, tenant: Tenant, user_id: str) -> dict[str, int]:
    """Delete every session of the subject (ADK's too) with its messages, rounds, checkpoints,
    transitions, ADK events and working state (ADK's app state is about no person and stays); returns counts per category. Called by userdata_app.erasure inside its
    transaction.

    The subject's session rows are locked first, so an append or round save that is running
    finishes before, and one that starts later finds the session gone. Bulk deletes: a fixed
    number of statements whatever the number of rows."""
    sessions = Session.objects.filter(tenant=tenant, user_id=user_id)
    session_pks = list(sessions.select_for_update().values_list("pk", flat=True))
    counts = {"working_state": working_state.get_store().count_many(session_pks)}
    working_state.get_store().clear_many(session_pks)
    in_sessions = {"session_id__in": sessions.values("pk")}
    for category, model in (
        ("messages", Message),
        ("rounds", Round),
        ("checkpoints", Checkpoint),
        ("transitions", AgentTransition),
        ("adk_events", AdkEvent),
    ):
        counts[category] = model.objects.filter(**in_sessions).delete()[0]
    counts["sessions"] = sessions.delete()[1].get(Session._meta.label, 0)
    return counts
