"""Serializer plumbing shared by the apps' APIs."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property, partial
from typing import Any, cast

from rest_framework import serializers


class StrictInput(serializers.Serializer):
    """A request body: a JSON object with only the declared fields (a typo is a 400, not a
    silently ignored field). It checks types and shape only; services check the rules."""

    def to_internal_value(self, data):
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

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """``data`` checked by ``serializer_class``; a 400 naming the fields otherwise."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class Output(serializers.Serializer):
    """A response shape. Fields are declared for the schema; values are read straight off the
    object (model fields already hold JSON types), only datetimes and nested shapes are converted:
    a page of 500 messages costs a fraction of DRF's field-by-field path."""

    @classmethod
    def sources(cls) -> tuple[str, ...]:
        """What a response reads off each object: a read that only serializes rows can ask the
        database for these alone (``.values(*sources)``) and skip building model instances."""
        return tuple(cast(str, field.source) for field in cls()._readable_fields)

    @cached_property
    def _plan(self) -> list[tuple[str, str, serializers.Field | None]]:
        """(key, source, converter or None) per field, worked out once per serializer, not per row.
        A datetime field's zone is looked up here once (DRF looks up the current time zone for every
        value it converts, which cost more than the conversion)."""
        plan: list[tuple[str, str, serializers.Field | None]] = []
        for field in self._readable_fields:
            if isinstance(field, serializers.DateTimeField) and not hasattr(field, "timezone"):
                zone = field.default_timezone()
                if zone is not None:  # None without USE_TZ: DRF then leaves datetimes as they are
                    field.timezone = zone
            converter = field if isinstance(field, _CONVERTED) else None
            plan.append((cast(str, field.field_name), cast(str, field.source), converter))
        return plan

    def to_representation(self, instance):
        read = instance.__getitem__ if isinstance(instance, Mapping) else partial(getattr, instance)
        data = {}
        for key, source, converter in self._plan:
            value = read(source)
            if value is not None and converter is not None:
                value = converter.to_representation(value)
            data[key] = value
        return data


_CONVERTED = (serializers.DateTimeField, serializers.BaseSerializer)
