"""Model usage per turn of a session (token counts; docs/DESIGN.md, "The domain": model usage).

Turn N of a history is the span from its N-th user message (``role`` "user") to the next, turn 0
what comes before the first: the OpenAI Agents SDK's turns. A turn has one usage row, replaced
when stored again; a history edit that removes a turn's messages removes its usage with them.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from agentstate.exceptions import InvalidInput
from agentstate.validation import clean_json
from sessions_app.models import Message, RunUsage, Session
from sessions_app.services.live import update_live_session

DETAILS_MAX_BYTES = 4096  # a turn's token details: a few named counts


def _clean_details(value: Any, *, field: str) -> dict[str, Any] | None:
    if value is None:
        return None
    clean_json(value, field=field, require_object=True)
    if len(json.dumps(value)) > DETAILS_MAX_BYTES:
        raise InvalidInput.for_field(field, f"At most {DETAILS_MAX_BYTES} bytes of JSON.")
    return value


@transaction.atomic
def run_usage_record(
    *,
    session: Session,
    turn: int | None = None,
    requests: int = 0,
    input_tokens: int = 0,
    output_tokens: int = 0,
    total_tokens: int = 0,
    input_tokens_details: dict[str, Any] | None = None,
    output_tokens_details: dict[str, Any] | None = None,
) -> RunUsage:
    """Store one turn's usage, replacing what that turn had. Without ``turn``: the history's current
    turn (how many user messages it holds), which an empty history does not have (400)."""
    input_tokens_details = _clean_details(input_tokens_details, field="input_tokens_details")
    output_tokens_details = _clean_details(output_tokens_details, field="output_tokens_details")
    update_live_session(session)  # the row lock: the turn counted is the turn stored
    if turn is None:
        counts = Message.objects.filter(session=session).aggregate(
            messages=Count("id"), users=Count("id", filter=Q(role="user"))
        )
        if not counts["messages"]:
            raise InvalidInput.for_field("turn", "The history is empty: there is no turn to attribute usage to.")
        turn = counts["users"]
    usage, _ = RunUsage.objects.update_or_create(
        session=session,
        turn=turn,
        defaults={
            "tenant_id": session.tenant_id,
            "user_id": session.user_id,
            "requests": requests,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": total_tokens,
            "input_tokens_details": input_tokens_details,
            "output_tokens_details": output_tokens_details,
            "updated_at": timezone.now(),
        },
    )
    return usage


def run_usage_drop_removed_turns(session: Session) -> None:
    """After a history edit: drop the usage of turns whose messages are gone (every turn whose user
    message went, and turn 0 once the history is empty). Called under the session's row lock."""
    counts = Message.objects.filter(session=session).aggregate(
        messages=Count("id"), users=Count("id", filter=Q(role="user"))
    )
    rows = RunUsage.objects.filter(session=session)
    (rows if not counts["messages"] else rows.filter(turn__gt=counts["users"])).delete()
