"""Serializer plumbing shared by the apps' APIs."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache, cached_property, partial
from typing import Any, cast

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agentstate.exceptions import InvalidInput
from agentstate.validation import parse_json_text


class StrictInput(serializers.Serializer):
    """A request body: a JSON object with only the declared fields (a typo is a 400, not a
    silently ignored field). It checks types and shape only; services check the rules."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


class StringField(serializers.CharField):
    """An input field that takes a JSON string only, exactly as sent: DRF's CharField turns 123
    into "123" and true into "True", and trims whitespace, so a client's wrong type or an id ending
    in a no-break space would be stored under another identifier (another person), not refused."""

    default_error_messages = {"invalid": "Must be a string."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


JSON_TEXT_FORMAT = "json"  # the schema's mark on a string that carries JSON text


@extend_schema_field({"type": "string", "format": JSON_TEXT_FORMAT})
class JSONTextField(StringField):
    """A JSON object sent as a string (ADK's state and events, LangGraph's filter), parsed by the
    rules of a JSON body (``parse_json_text``); the validated value is the object. The schema marks
    it ``format: json`` so that clients, and the tests of every JSON field, can find it."""

    default_error_messages = {"invalid": "Must be a string of JSON text.", "not_object": "Must be a JSON object."}

    def to_internal_value(self, data: Any) -> Any:  # a dict, where the string field it extends has a str
        text = super().to_internal_value(data)
        field = cast(str, self.field_name)  # set when the field is bound, before any validation
        try:
            value = parse_json_text(text, field=field)
        except InvalidInput as exc:
            raise serializers.ValidationError(exc.fields[field]) from None
        if not isinstance(value, dict):
            self.fail("not_object")
        return value


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """``data`` checked by ``serializer_class``; a 400 naming the fields otherwise."""
    serializer = serializer_class(data=data)
    serializer.__dict__["fields"] = _input_fields(serializer_class)  # DRF's ``fields`` is a cached_property
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


@cache
def _input_fields(serializer_class: type[serializers.Serializer]) -> Any:
    """The class's fields, copied and bound once: DRF deep-copies every declared field for every
    serializer it builds (two thirds of a validation's time). Input fields keep no state of a
    validation (values and errors travel as return values and exceptions, and no input serializer
    here reads its context or instance), so every request's serializer can share them."""
    return serializer_class().fields


class Output(serializers.Serializer):
    """A response shape. Fields are declared for the schema; values are read straight off the
    object (model fields already hold JSON types), only datetimes and nested shapes are converted:
    a page of 500 messages costs a fraction of DRF's field-by-field path."""

    @cached_property
    def _plan(self) -> Plan:
        """(key, source, converter or None) per field: looked up once per serializer, not per row,
        and worked out once per class and time zone, not per request (DRF deep-copies the declared
        fields for every serializer it builds)."""
        zone = timezone.get_current_timezone() if settings.USE_TZ else None
        plan = _PLANS.get((type(self), zone))
        if plan is None:
            plan = _PLANS[type(self), zone] = type(self)()._work_out_plan(zone)
        return plan

    def _work_out_plan(self, zone) -> Plan:
        """A datetime field's zone is set here (DRF looks up the current time zone for every value it
        converts, which cost more than the conversion). The fields are this throwaway instance's
        own, shared by every later serializer of the class: converters keep no per-request state."""
        plan: Plan = []
        for field in self._readable_fields:
            if isinstance(field, serializers.DateTimeField) and not hasattr(field, "timezone") and zone is not None:
                field.timezone = zone  # without USE_TZ DRF leaves datetimes as they are
            converter = field if isinstance(field, _CONVERTED) else None
            plan.append((cast(str, field.field_name), cast(str, field.source), converter))
        return plan

    def to_representation(self, instance: Any) -> dict[str, Any]:
        read = instance.__getitem__ if isinstance(instance, Mapping) else partial(getattr, instance)
        data = {}
        for key, source, converter in self._plan:
            value = read(source)
            if value is not None and converter is not None:
                value = converter.to_representation(value)
            data[key] = value
        return data


_CONVERTED = (serializers.DateTimeField, serializers.BaseSerializer)
Plan = list[tuple[str, str, serializers.Field | None]]
_PLANS: dict[tuple[type[Output], Any], Plan] = {}
