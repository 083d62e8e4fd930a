"""Request and response shapes of the process-state API.

Input serializers check only types and shape (and refuse unknown fields, so a typo is a 400, not
a silent no-op); every rule (identifiers, JSON limits, counters) is checked by the services.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Case, F, TextField, Value, When
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agentstate.api.json_rows import JSONRow, JSONValue
from agentstate.api.pagination import SearchPageQuery
from agentstate.api.serializers import Output, StrictInput, StringField
from sessions_app.selectors.messages import MAX_RECENT


def _text(**kwargs) -> serializers.CharField:
    """A string passed to the service as sent (no trimming: the service decides)."""
    return StringField(**kwargs)


def _optional_text(help_text: str) -> serializers.CharField:
    return _text(required=False, allow_blank=True, allow_null=True, help_text=help_text)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"type": {"type": "string"}},
                    "required": ["type"],
                    "additionalProperties": True,
                },
            },
        ],
        "nullable": True,
        "description": 'A string, a list of typed parts ({"type": ..., ...}), or null.',
    }
)
class ContentField(serializers.JSONField):
    pass


# --- Sessions -----------------------------------------------------------------------------


class SessionSerializer(Output):
    user_id = serializers.CharField()
    session_id = serializers.CharField()
    agent_id = serializers.CharField()
    workspace_id = serializers.CharField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    ended_by_retention = serializers.BooleanField(
        help_text="True while retention's idle rule has the session ended: the next write reopens it. An end an "
        "agent asked for is final."
    )
    message_count = serializers.IntegerField(help_text="How many messages the history holds now.")
    last_seq = serializers.IntegerField(help_text="The last seq ever given; never reused, so edits leave gaps.")
    history_generation = serializers.IntegerField(
        help_text="Advanced by every pop, rewind or clear that removed something: a reader following after_seq "
        "whose generation changed must read the history again."
    )
    forked_from = serializers.DictField(
        allow_null=True,
        source="fork_origin",
        help_text="For a fork: {session_id, seq, round} of the session and point it was copied from; else null.",
    )
    version = serializers.IntegerField(help_text="Also sent as the ETag; send it back as If-Match.")

    # The list's rows are written by the database (agentstate.api.json_rows); fork_origin is a property.
    json_sources = {
        "ended_by_retention": JSONValue(
            Case(When(ended_by_retention=True, then=Value("true")), default=Value("false"), output_field=TextField())
        ),
        "fork_origin": JSONValue(
            Case(
                When(forked_from_seq=None, then=Value(None)),
                default=JSONRow(
                    session_id=F("forked_from_session_id"), seq=F("forked_from_seq"), round=F("forked_from_round")
                ),
                output_field=TextField(),
            )
        ),
    }


class SessionCreateInput(StrictInput):
    user_id = _text()
    session_id = _optional_text(
        "Stripped of outer whitespace, by design (as fork's new_session_id; every other id is stored "
        "exactly as sent); blank or absent: a new UUID."
    )
    agent_id = _optional_text("Agent in charge of the session.")
    workspace_id = _optional_text("Workspace the session belongs to.")
    metadata = serializers.DictField(required=False)


class SessionUpdateInput(StrictInput):
    agent_id = _optional_text("Agent in charge of the session.")
    workspace_id = _optional_text("Workspace the session belongs to.")
    metadata = serializers.DictField(required=False, help_text="Replaces the whole metadata object.")


# --- Messages -----------------------------------------------------------------------------


class MessageInput(StrictInput):
    """One message to append; ``client_id`` makes a retried append safe."""

    client_id = _optional_text("The client's message id: a retry with the same id stores nothing twice.")
    role = _optional_text("user, assistant, system, tool, ...")
    type = _optional_text('Default "message".')
    status = _optional_text("")
    name = _optional_text("")
    content = ContentField(required=False)
    metadata = serializers.DictField(required=False)
    usage = serializers.DictField(required=False, allow_null=True)


class MessageAppendInput(StrictInput):
    messages = MessageInput(many=True, help_text="1 to 500 messages, stored atomically in this order.")


class KeptTimeField(serializers.DateTimeField):
    """A time that may come as the text a pop's kept answer stored (``message_as_dict``): answered
    as every time of the API is (UTC as ``Z``), not as that text was written."""

    def to_representation(self, value: Any) -> Any:
        kept = parse_datetime(value) if isinstance(value, str) else value
        return super().to_representation(kept if kept is not None else value)


class MessageSerializer(Output):
    seq = serializers.IntegerField(help_text="Gap-free position in the session's history, from 1.")
    client_id = serializers.CharField(allow_null=True)
    role = serializers.CharField()
    type = serializers.CharField()
    status = serializers.CharField()
    name = serializers.CharField()
    content = ContentField()
    metadata = serializers.DictField()
    usage = serializers.DictField(allow_null=True)
    created_at = KeptTimeField()


class MessageAppendedSerializer(Output):
    messages = MessageSerializer(many=True)


def _expected_last_seq() -> serializers.IntegerField:
    return serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="The newest seq you saw (0: an empty history): if the history's newest message is another one, "
        "nothing changes and the answer is 412.",
    )


class MessagePopInput(StrictInput):
    idempotency_key = _optional_text("Makes a retried pop safe: the same key returns the same answer, pops nothing.")
    expected_last_seq = _expected_last_seq()


class MessagePoppedSerializer(Output):
    message = MessageSerializer(allow_null=True, help_text="The message removed; null when the history was empty.")


class MessageRewindInput(StrictInput):
    after_seq = serializers.IntegerField(help_text="Every message with a larger seq is removed.")
    after_round = serializers.IntegerField(
        required=False, allow_null=True, help_text="Also remove every round with a larger round_id."
    )
    expected_last_seq = _expected_last_seq()


class MessageClearInput(StrictInput):
    expected_last_seq = _expected_last_seq()


class HistoryEditSerializer(Output):
    removed_messages = serializers.IntegerField()
    removed_rounds = serializers.IntegerField()
    session = SessionSerializer()


class SessionForkInput(StrictInput):
    new_session_id = _optional_text(
        "The fork's session id (same user): stripped of outer whitespace, as on session create (by design); "
        "blank or absent: a new UUID."
    )
    up_to_seq = serializers.IntegerField(
        required=False, allow_null=True, help_text="Copy messages with seq up to this one; absent: all."
    )
    up_to_round = serializers.IntegerField(
        required=False, allow_null=True, help_text="Copy rounds with round_id up to this one; absent: all."
    )
    expected_last_seq = _expected_last_seq()
    metadata = serializers.DictField(
        required=False, allow_null=True, help_text="The fork's metadata; absent: the parent's."
    )


class MessageQuery(serializers.Serializer):
    after_seq = serializers.IntegerField(
        required=False, min_value=0, max_value=2**63 - 1, help_text="Only messages with a larger seq."
    )
    role = serializers.CharField(required=False, help_text="Only messages of this role.")
    recent = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_RECENT,
        help_text="The last N messages (in seq order), as one page with no next.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "recent" in attrs and "after_seq" in attrs:
            raise serializers.ValidationError({"recent": ["Use either recent or after_seq, not both."]})
        return attrs


class MessageSearchQuery(SearchPageQuery):
    q = serializers.CharField(
        trim_whitespace=False,
        help_text='Words that must appear (whole words, any case), "quoted phrases", `or` between alternatives, '
        "`-word` to exclude.",
    )


class MessageHitSerializer(Output):
    session_id = serializers.CharField()
    seq = serializers.IntegerField()
    role = serializers.CharField()
    rank = serializers.FloatField(help_text="Higher is better; compare it only within one search.")
    snippet = serializers.CharField(help_text="The matched words between ** in a piece of the text (plain text).")


class MessageSearchPage(serializers.Serializer):
    next = serializers.URLField(allow_null=True)
    results = MessageHitSerializer(many=True)


# --- Rounds -------------------------------------------------------------------------------


class RoundSerializer(Output):
    round_id = serializers.IntegerField()
    state = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    version = serializers.IntegerField(help_text="Also sent as the ETag; send it back as If-Match.")


class RoundSummarySerializer(Output):
    round_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    version = serializers.IntegerField()


class RoundSaveInput(StrictInput):
    state = serializers.DictField()
    round_id = serializers.IntegerField(
        required=False, allow_null=True, help_text="0..2147483647; absent: the largest round id + 1 (or 1)."
    )


class RoundPutInput(StrictInput):
    state = serializers.DictField()


# --- Checkpoints, transitions, working state, restore ---------------------------------------


class CheckpointSerializer(Output):
    id = serializers.IntegerField()
    label = serializers.CharField()  # type: ignore[assignment]  # an API field, not Field.label
    state = serializers.DictField()
    created_at = serializers.DateTimeField()


class CheckpointSummarySerializer(Output):
    id = serializers.IntegerField()
    label = serializers.CharField()  # type: ignore[assignment]  # an API field, not Field.label
    created_at = serializers.DateTimeField()


class CheckpointCreateInput(StrictInput):
    label = _text()  # type: ignore[assignment]  # an API field, not Field.label
    include_keys = serializers.ListField(
        child=_text(),
        required=False,
        allow_null=True,
        help_text="Working-state keys to promote (missing ones skipped); absent: all.",
    )
    state = serializers.DictField(
        required=False, allow_null=True, help_text="A state to store instead of the working state."
    )


class CheckpointQuery(serializers.Serializer):
    label = serializers.CharField(help_text="The label whose newest checkpoint to return.")  # type: ignore[assignment]  # an API field


class TransitionSerializer(Output):
    id = serializers.IntegerField()
    from_agent = serializers.CharField()
    to_agent = serializers.CharField()
    reason = serializers.CharField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()


class TransitionInput(StrictInput):
    to_agent = _text()
    from_agent = _optional_text("")
    reason = _text(required=False, allow_blank=True)
    metadata = serializers.DictField(required=False)


class RestoreSerializer(Output):
    session = SessionSerializer()
    checkpoints = CheckpointSerializer(many=True)
    working_state = serializers.DictField()


COUNT_MAX = 2**63 - 1


def _count(**kwargs) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, max_value=COUNT_MAX, **kwargs)


def _token_details() -> serializers.DictField:
    return serializers.DictField(
        required=False, allow_null=True, help_text="The SDK's token details as it has them (a small JSON object)."
    )


class RunUsageInput(StrictInput):
    turn = serializers.IntegerField(
        min_value=0,
        max_value=2**31 - 1,
        required=False,
        allow_null=True,
        help_text="The turn (its user message's number, 0 before the first); absent: the history's current turn.",
    )
    requests = _count(required=False, default=0)
    input_tokens = _count(required=False, default=0)
    output_tokens = _count(required=False, default=0)
    total_tokens = _count(required=False, default=0)
    input_tokens_details = _token_details()
    output_tokens_details = _token_details()


class RunUsageSerializer(Output):
    turn = serializers.IntegerField()
    requests = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    input_tokens_details = serializers.DictField(allow_null=True)
    output_tokens_details = serializers.DictField(allow_null=True)
    updated_at = serializers.DateTimeField()
