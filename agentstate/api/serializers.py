"""Serializer plumbing shared by the apps' APIs."""
from __future__ import annotations

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


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """``data`` checked by ``serializer_class``; a 400 naming the fields otherwise."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
