"""ADK's ``user:`` state in the map of people's data: per app, and each event's part of it."""

from __future__ import annotations

from agentstate.subject_data import Export, ExportedWith, Portable, SubjectData
from agentstate.subjects import USER_DATA
from agentstate.validation import clean_identifier
from backends.adk.people.models import AdkEventUserDelta, AdkUserState
from backends.adk.people.selectors import subject_adk_user_state_export

CATEGORY = "adk_user_state"


def declarations() -> tuple[SubjectData, ...]:
    """ADK's ``user:`` state in the map of people's data, registered with the backend (``backends.adk.apps``)."""
    return (
        SubjectData(
            model=AdkUserState,
            category=CATEGORY,
            kind=USER_DATA,
            label="ADK user state",
            existed="updated_at",
            export=Export(CATEGORY, subject_adk_user_state_export),
            portable=Portable(
                "adk_user_state",
                order=("user_id", "app_name"),
                key=("user_id", "app_name"),
                checks={"app_name": clean_identifier},
            ),
        ),
        SubjectData(
            model=AdkEventUserDelta,
            category=CATEGORY,
            kind=USER_DATA,
            label="ADK user state",
            existed="created_at",
            hangs_off="session_pk",  # its event's session: a hold on it keeps the delta
            export=ExportedWith(CATEGORY),
            # Travels in its session's block (session_pk written as the session's key).
            portable=Portable(
                "adk_event_user_delta",
                order=("event_seq",),
                refs={"session_pk": "sessions_app.Session"},
                checks={"app_name": clean_identifier},
            ),
        ),
    )
