"""ADK's state keys and the JSON text it is stored as.

ADK splits one state dict by key prefix: ``app:`` (the app's), ``user:`` (the user's), ``temp:``
(never stored), the rest the session's. Stored state and events are JSON text, not a JSON column:
they come back exactly as written, and a NUL character (which PostgreSQL's jsonb refuses and ADK's
own SQLite store keeps) stays an escape in the text.
"""

from __future__ import annotations

import json
from typing import Any

APP_PREFIX = "app:"
USER_PREFIX = "user:"
TEMP_PREFIX = "temp:"


def state_split(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{"app", "user", "session"}`` parts of an ADK state or delta, prefixes removed; ``temp:``
    keys are dropped."""
    parts: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
    for key, value in state.items():
        if key.startswith(APP_PREFIX):
            parts["app"][key.removeprefix(APP_PREFIX)] = value
        elif key.startswith(USER_PREFIX):
            parts["user"][key.removeprefix(USER_PREFIX)] = value
        elif not key.startswith(TEMP_PREFIX):
            parts["session"][key] = value
    return parts


def state_merge(*, app: dict[str, Any], user: dict[str, Any], session: dict[str, Any]) -> dict[str, Any]:
    """The state ADK callers read: the session's keys, then ``app:`` and ``user:`` keys."""
    merged = dict(session)
    merged.update({APP_PREFIX + key: value for key, value in app.items()})
    merged.update({USER_PREFIX + key: value for key, value in user.items()})
    return merged


def json_text(value: Any) -> str:
    """JSON text as stored: ASCII only, so control characters (NUL too) are escapes."""
    return json.dumps(value, separators=(",", ":"))


def json_object(text: str) -> dict[str, Any]:
    """A stored state (empty text reads as no state)."""
    return json.loads(text) if text else {}
