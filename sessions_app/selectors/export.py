"""Process state shaped as JSON-ready data, as the API shows it and exports write it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentstate.tenancy.models import Tenant
from sessions_app import backends
from sessions_app.models import (
    Message,
    RetentionPolicy,
    RunUsage,
)


def iso(value: datetime | None) -> str | None:
    """A time as exports write it (ISO 8601), None kept."""
    return value.isoformat() if value is not None else None


# The fields the API shows of a message, in its order: ``message_as_dict``'s, and those of a pop's
# kept answer, which PostgreSQL builds in the pop's statement (``to_jsonb`` writes a time as ``iso``).
MESSAGE_FIELDS = ("seq", "client_id", "role", "type", "status", "name", "content", "metadata", "usage", "created_at")


def message_as_dict(m: Message) -> dict[str, Any]:
    """A message as JSON-ready data, the fields the API shows (export, a pop's kept answer)."""
    shown = {name: getattr(m, name) for name in MESSAGE_FIELDS}
    shown["created_at"] = iso(m.created_at)
    return shown


USAGE_COUNTS = ("requests", "input_tokens", "output_tokens", "total_tokens")


def run_usage_as_dict(u: RunUsage) -> dict[str, Any]:
    """One turn's usage as JSON-ready data, the fields the API shows (and the export)."""
    return {
        "turn": u.turn,
        **{name: getattr(u, name) for name in USAGE_COUNTS},
        "input_tokens_details": u.input_tokens_details,
        "output_tokens_details": u.output_tokens_details,
        "updated_at": iso(u.updated_at),
    }


def retention_policy_fields() -> tuple[str, ...]:
    """The rules of a policy: the core's columns, then each registered backend's."""
    return (*RetentionPolicy.RULES, *(rule.policy_field for rule in backends.retention_rules()))


def retention_policy_as_dict(*, tenant: Tenant) -> dict[str, Any]:
    """The tenant's retention rules as the API shows them: null means keep everything (no policy, or
    that rule empty)."""
    policy = RetentionPolicy.objects.filter(tenant=tenant).first()
    rules = {name: policy.rule(name) if policy else None for name in retention_policy_fields()}
    return {"configured": policy is not None, **rules, "updated_at": policy.updated_at if policy else None}
