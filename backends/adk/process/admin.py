"""Google ADK's events and app: state as staff browse them (a session's page shows them merged with
the user: state, wired in by the project level)."""

from __future__ import annotations

import json
from datetime import datetime

from django.contrib import admin
from django.utils.safestring import SafeString

from agentstate.admin.display import one_line, pretty_json, related_display
from agentstate.admin.options import ReadOnlyAdmin
from agentstate.validation import timestamp_datetime
from backends.adk.process.models import AdkAppState, AdkEvent
from sessions_app.admin.history import SessionChildAdmin


@admin.register(AdkEvent)
class AdkEventAdmin(SessionChildAdmin):
    list_display = ("seq", "session_link", "author", "text_preview", "event_time")
    list_display_links = ("seq",)
    ordering = ("session_id", "seq")  # the (session, seq) unique index
    list_per_page = 100
    fields = ("session_link", "seq", "event_id", "invocation_id", "author", "event_time", "text", "event_json")
    readonly_fields = ("session_link", "event_time", "event_json")
    list_deferred = ("data",)
    list_previewed = ("text",)

    @admin.display(description="text")
    def text_preview(self, obj: AdkEvent) -> str:
        return one_line(obj.text_start)  # type: ignore[attr-defined]

    @admin.display(description="time", ordering="timestamp")
    def event_time(self, obj: AdkEvent) -> datetime | None:
        return timestamp_datetime(obj.timestamp)  # None (shown as "-") for one stored before the check

    @admin.display(description="event (its user: delta is user data, shown on the session page)")
    def event_json(self, obj: AdkEvent) -> SafeString:
        return pretty_json(json.loads(obj.data))


@admin.register(AdkAppState)
class AdkAppStateAdmin(ReadOnlyAdmin):
    """ADK's app: state, one row per tenant and app."""

    list_display = ("app_name", "tenant", "updated_at")
    list_select_related = ("tenant",)
    list_filter = ("tenant",)
    search_fields = ("app_name__exact",)
    ordering = ("tenant", "app_name")
    fields = ("tenant_shown", "app_name", "updated_at", "state_json")
    readonly_fields = ("tenant_shown", "state_json")
    tenant_shown = related_display("tenant", description="tenant")

    @admin.display(description="state")
    def state_json(self, obj: AdkAppState) -> SafeString:
        return pretty_json(json.loads(obj.state))
