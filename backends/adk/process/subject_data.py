"""ADK's process state in the map of people's data: a session's events hang off it and go with it.
(Its ``user:`` state is user data: ``backends.adk.people.subject_data``; ``app:`` state is about no
person.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from agentstate.subject_data import Portable, SubjectData
from backends.adk.process.models import AdkEvent
from sessions_app.selectors import iso
from sessions_app.services.retention import AgesWithMessages
from sessions_app.subject_data import SessionPart, process_state


def declarations() -> tuple[SubjectData, ...]:
    """ADK's events in the map of people's data, registered with the backend (``backends.adk.apps``)."""
    return (
        process_state(
            AdkEvent,
            "adk_events",
            # The event as stored, its time as a date a person reads (ADK keeps seconds since 1970):
            # its user: delta is user data, exported with it (adk_user_state).
            SessionPart("adk_events", event_exported, order=("seq",), large=("data",)),
            label="ADK events",
            retention=AgesWithMessages(),
            portable=Portable("adk_event", order=("seq",)),
        ),
    )


def event_exported(event: AdkEvent) -> dict:
    stored = json.loads(event.data)
    try:
        stored["timestamp"] = iso(datetime.fromtimestamp(event.timestamp, tz=UTC))
    except (OverflowError, OSError, ValueError):
        pass  # stored before the API refused times no date can hold: exported as stored
    return {"seq": event.seq, "event": stored}
