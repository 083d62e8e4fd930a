"""Serializer plumbing shared by the apps' APIs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

    def to_representation(self, instance):
        data = {}
        for field in self._readable_fields:
            value = instance[field.source] if isinstance(instance, Mapping) else getattr(instance, field.source)
            if value is not None and isinstance(field, _CONVERTED):
                value = field.to_representation(value)
            data[field.field_name] = value
        return data


_CONVERTED = (serializers.DateTimeField, serializers.BaseSerializer)
