"""Request and response shapes of the ADK endpoints. State and events travel as ADK wrote them;
requests carry them as JSON text (``json.dumps`` output), so any value ADK's own stores keep, NUL
characters included, arrives intact."""

from __future__ import annotations

import math
from typing import Any

from rest_framework import serializers

from agentstate.api.serializers import JSONTextField, StrictInput, StringField


class FiniteFloatField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError("Must be a finite number.")
        return value


class AdkSessionCreateInput(StrictInput):
    session_id = StringField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=128,
        help_text="Stripped of outer whitespace, as on every session create; blank or absent: a new UUID.",
    )
    state = JSONTextField(required=False, default=dict, help_text="The initial state as JSON text (an object).")


class AdkEventAppendInput(StrictInput):
    event = JSONTextField(help_text="The event as ADK dumps it (model_dump_json, field names), JSON text.")
    expected_version = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=2**31 - 1,
        help_text="The session version the writer last read: another one means its session is stale (409).",
    )
    last_update_time = FiniteFloatField(required=False, allow_null=True)
    last_event_id = StringField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)


class AdkGetSessionQuery(serializers.Serializer):
    num_recent_events = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    after_timestamp = FiniteFloatField(required=False)
    held = StringField(
        required=False,
        trim_whitespace=False,
        help_text="The events_token of your last whole read: if those events are still the session's, "
        "the answer holds only the events appended since (events_held true).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "held" in attrs and attrs.keys() & {"num_recent_events", "after_timestamp"}:
            raise serializers.ValidationError({"held": ["is for a whole read, without a window."]})
        return attrs


class AdkSessionListQuery(serializers.Serializer):
    user_id = StringField(required=False, trim_whitespace=False)
    cursor = StringField(required=False, trim_whitespace=False)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=500)


class AdkEventPageQuery(serializers.Serializer):
    cursor = StringField(trim_whitespace=False)


class AdkSessionOutput(serializers.Serializer):
    id = serializers.CharField()
    app_name = serializers.CharField()
    user_id = serializers.CharField()
    state = serializers.DictField(help_text="Session, app: and user: state merged, as ADK reads it.")
    last_update_time = serializers.FloatField()
    version = serializers.IntegerField(help_text="Send it back as expected_version when appending.")
    events = serializers.ListField(child=serializers.DictField(), help_text="Oldest first, as ADK dumped them.")
    events_next = serializers.CharField(allow_null=True, help_text="Cursor of the next page of events, if any.")
    events_token = serializers.CharField(
        required=False, help_text="A whole read's: what you then hold, to send back as held (see held)."
    )
    events_held = serializers.BooleanField(
        required=False, help_text="True: events are only those appended after what held names; keep yours."
    )
    events_more = serializers.BooleanField(
        required=False, help_text="With events_held: more events follow; read again with this events_token."
    )


class AdkEventPageOutput(serializers.Serializer):
    events = serializers.ListField(child=serializers.DictField())
    next = serializers.CharField(allow_null=True)


class AdkEventAppendedOutput(serializers.Serializer):
    version = serializers.IntegerField()
    last_update_time = serializers.FloatField()


class AdkSessionListOutput(serializers.Serializer):
    sessions = AdkSessionOutput(many=True, help_text="Without events.")
    next = serializers.CharField(allow_null=True)


class AdkStateOutput(serializers.Serializer):
    state = serializers.DictField()
