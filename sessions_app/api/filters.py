"""Filters of the session list (django-filter). The selector applies them; each one is served by
an index of Session (see its Meta) or, for the unindexed ones, bounded by ``user_id``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import django_filters
from django.db.models import QuerySet
from rest_framework.exceptions import ValidationError

from agentstate.validation import clean_datetime
from sessions_app import selectors
from sessions_app.models import Session

# No index serves these across a whole tenant; within one user's sessions the scan is small.
NEEDS_USER_ID = ("ended", "updated_after", "updated_before")


class SessionFilter(django_filters.FilterSet):
    user_id = django_filters.CharFilter(help_text="Sessions of this user.")
    agent_id = django_filters.CharFilter(help_text="Sessions run by this agent.")
    workspace_id = django_filters.CharFilter(help_text="Sessions of this workspace.")
    ended = django_filters.BooleanFilter(help_text="true: ended sessions only; false: live ones. Needs user_id.")
    created_after = django_filters.IsoDateTimeFilter(help_text="Created at or after (ISO 8601).")
    created_before = django_filters.IsoDateTimeFilter(help_text="Created before (ISO 8601).")
    updated_after = django_filters.IsoDateTimeFilter(help_text="Updated at or after (ISO 8601). Needs user_id.")
    updated_before = django_filters.IsoDateTimeFilter(help_text="Updated before (ISO 8601). Needs user_id.")

    class Meta:
        model = Session
        fields: list[str] = []

    def filter_queryset(self, queryset: QuerySet[Session]) -> QuerySet[Session]:
        """Ignores ``queryset`` beyond its tenant: ``selectors.session_list`` is the one place the
        filters are applied."""
        given: dict[str, Any] = {
            name: clean_datetime(value, field=name) if isinstance(value, datetime) else value
            for name, value in self.form.cleaned_data.items()
            if value not in (None, "")
        }
        if "user_id" not in given:
            unserved = [name for name in NEEDS_USER_ID if name in given]
            if unserved:
                raise ValidationError(
                    {name: ["Needs user_id: no index serves it across a whole tenant."] for name in unserved}
                )
        return selectors.session_list(tenant=self.request.tenant, **given)
