"""Writes to process state. Every rule of sessions, history (appends and edits), rounds, checkpoints, transitions and
working state lives in exactly one function of this package, one module per entity; views, admin
and commands call them through this package (``from sessions_app import services``)."""

from sessions_app.services.checkpoints import checkpoint_create
from sessions_app.services.history import (
    HistoryEdit,
    message_clear,
    message_pop,
    message_pop_from,
    message_rewind,
    session_fork,
)
from sessions_app.services.live import working_state_clear_refused
from sessions_app.services.messages import MAX_MESSAGES_PER_APPEND, AppendResult, message_append, message_append_to
from sessions_app.services.retention import retention_apply, retention_policy_clean, retention_policy_save
from sessions_app.services.rounds import round_delete, round_save
from sessions_app.services.sessions import session_create, session_delete, session_end, session_update
from sessions_app.services.transitions import transition_record
from sessions_app.services.usage import run_usage_record
from sessions_app.services.working_state import (
    working_state_clear,
    working_state_orphans_clear,
    working_state_patch,
    working_state_purge_expired,
    working_state_replace,
)

__all__ = [
    "MAX_MESSAGES_PER_APPEND",
    "AppendResult",
    "HistoryEdit",
    "checkpoint_create",
    "message_append",
    "message_append_to",
    "message_clear",
    "message_pop",
    "message_pop_from",
    "message_rewind",
    "retention_apply",
    "retention_policy_clean",
    "retention_policy_save",
    "round_delete",
    "round_save",
    "run_usage_record",
    "session_create",
    "session_delete",
    "session_end",
    "session_fork",
    "session_update",
    "transition_record",
    "working_state_clear",
    "working_state_clear_refused",
    "working_state_orphans_clear",
    "working_state_patch",
    "working_state_purge_expired",
    "working_state_replace",
]
