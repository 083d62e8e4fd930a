"""Shapes of the user-data API."""

from rest_framework import serializers

from agentstate.api.serializers import Output, StrictInput


class UserDatumSerializer(Output):
    key = serializers.CharField()
    value = serializers.JSONField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class UserDatumInput(StrictInput):
    value = serializers.JSONField(allow_null=True, help_text="Any JSON value.")
