"""LangGraph's checkpointer as staff browse it: threads with their timeline of checkpoints, each
checkpoint's state and pending writes."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from agentstate.admin.display import json_display, pretty_json
from agentstate.admin.options import ReadOnlyAdmin
from agentstate.holds.admin import HeldPage
from agentstate.holds.models import LegalHold
from agentstate.holds.selectors import holds_of
from backends.langgraph.process import presenters
from backends.langgraph.process import selectors as langgraph_selectors
from backends.langgraph.process.models import LangGraphCheckpoint, LangGraphThread, LangGraphWrite
from backends.langgraph.process.staff_view import staff_view
from sessions_app.admin.history import SessionChildAdmin
from sessions_app.admin.sessions import SessionLabelTitle, session_label
from sessions_app.backends import FrameworkSection
from sessions_app.models import Session

LANGGRAPH_TIMELINE = 100


def stored_value(value_type: str, value: bytes | memoryview, rendered: Any) -> SafeString:
    """A stored LangGraph value: its JSON view, or the serializer's type and size without one."""
    if rendered is not None:
        return pretty_json(rendered)
    return format_html('<span class="quiet">{} value, {} bytes</span>', value_type, len(value))


def timeline(session: Session, *, thread_url: str = "", session_url: str = "") -> str:
    """A thread's checkpoints as a tree in step order (``presenters.checkpoint_tree``), with a link
    to the thread's page (``thread_url``) or back to its session's (``session_url``)."""
    checkpoints = langgraph_selectors.thread_timeline(session_pk=session.pk, limit=LANGGRAPH_TIMELINE)
    rows = presenters.checkpoint_tree(checkpoints)
    return render_to_string(
        "admin/sessions_app/langgraphthread/timeline.html",
        {
            "rows": [
                (r, reverse("admin:sessions_app_langgraphcheckpoint_change", args=[r.checkpoint.pk])) for r in rows
            ],
            "all_url": reverse("admin:sessions_app_langgraphcheckpoint_changelist")
            + f"?session__id__exact={session.pk}",
            "more": len(checkpoints) == LANGGRAPH_TIMELINE,
            "thread_url": thread_url,
            "session_url": session_url,
        },
    )


def session_section(session: Session) -> str:
    """The checkpoints on a LangGraph session's page, linked to its thread's page."""
    return timeline(session, thread_url=reverse("admin:sessions_app_langgraphthread_change", args=[session.pk]))


STAFF_SECTION = FrameworkSection("LangGraph checkpoints", session_section)


@admin.register(LangGraphThread)
class LangGraphThreadAdmin(HeldPage, SessionLabelTitle, ReadOnlyAdmin):
    list_display = ("thread_id", "session_link", "created_at")
    list_display_links = ("thread_id",)
    list_select_related = ("session__tenant",)
    list_filter = ("tenant",)
    ordering = ("-session_id",)
    fields = ("session_link", "thread_id", "created_at", "timeline")
    readonly_fields = ("session_link", "timeline")

    def object_title(self, obj: LangGraphThread) -> str:
        return f"Thread {obj.thread_id}"

    def holds_of_object(self, obj: LangGraphThread) -> QuerySet[LegalHold]:
        return holds_of(tenant=obj.session.tenant, user_id=obj.session.user_id, session_pk=obj.session_id)

    @admin.display(description="session", ordering="session_id")
    def session_link(self, obj: LangGraphThread) -> SafeString:
        return session_label(obj.session)

    @admin.display(description="checkpoints")
    def timeline(self, obj: LangGraphThread) -> str:
        url = reverse("admin:sessions_app_session_change", args=[obj.session_id])
        return timeline(obj.session, session_url=url)


@admin.register(LangGraphCheckpoint)
class LangGraphCheckpointAdmin(SessionChildAdmin):
    list_display = (
        "checkpoint_id",
        "session_link",
        "checkpoint_ns",
        "step",
        "source",
        "parent_checkpoint_id",
        "created_at",
    )
    list_display_links = ("checkpoint_id",)
    ordering = ("-session_id", "-checkpoint_id")  # the (session, checkpoint_id) index, read backwards
    fields = (
        "session_link",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "step",
        "source",
        "run_id",
        "created_at",
        "metadata_json",
        "channel_versions_json",
        "state",
        "pending_writes",
    )
    readonly_fields = ("session_link", "metadata_json", "channel_versions_json", "state", "pending_writes")

    def get_queryset(self, request: HttpRequest) -> QuerySet[LangGraphCheckpoint]:
        return super().get_queryset(request).defer("value", "channel_versions", "metadata")

    def object_title(self, obj: LangGraphCheckpoint) -> str:
        return f"Checkpoint at step {obj.step}" if obj.step is not None else "Checkpoint"

    metadata_json = json_display("metadata")

    channel_versions_json = json_display("channel_versions")

    @admin.display(description="state (channel values)")
    def state(self, obj: LangGraphCheckpoint) -> SafeString:
        langgraph_selectors.checkpoint_blobs([obj])  # the values it names, stored apart
        return stored_value(obj.value_type, obj.value, obj.rendered)

    @admin.display(description="pending writes")
    def pending_writes(self, obj: LangGraphCheckpoint) -> str:
        writes = langgraph_selectors.checkpoint_tuples([obj])[0].writes
        return render_to_string(
            "admin/sessions_app/langgraphthread/writes.html",
            {
                "writes": [(w, stored_value(w.value_type, w.value, staff_view(w.value_type, w.value))) for w in writes],
            },
        )


@admin.register(LangGraphWrite)
class LangGraphWriteAdmin(SessionChildAdmin):
    list_display = ("id", "session_link", "checkpoint_id", "task_id", "idx", "channel", "created_at")
    list_display_links = ("id",)
    ordering = ("-id",)
    fields = (
        "session_link",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "task_path",
        "idx",
        "channel",
        "created_at",
        "value_display",
    )
    readonly_fields = ("session_link", "value_display")

    @admin.display(description="value")
    def value_display(self, obj: LangGraphWrite) -> SafeString:
        return stored_value(obj.value_type, obj.value, obj.rendered)
