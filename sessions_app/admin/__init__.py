"""Staff browse process state here; nothing is edited or deleted from the admin (history is
append-only; deletion goes through the API or an erasure request). Built on the platform's admin
toolkit (``agentstate.admin``): capped counts, no per-row queries, exact searches and filters on
indexed columns, identifiers shown as stored.

A module per area, each registering its admins when imported: ``sessions`` (the session list and
page), ``history`` (what a session holds: messages, rounds, checkpoints, agent transitions),
``retention`` (policies and runs). The framework backends' admins live in their backends, discovered as every app's.
"""

from sessions_app.admin import history, retention, sessions

__all__ = ["history", "retention", "sessions"]
