"""Staff browse process state here; nothing is edited or deleted from the admin (history is
append-only; deletion goes through the API or an erasure request).

Built for big tables: counts capped at ``CappedPaginator.cap`` rows, no per-row queries, exact,
case-sensitive searches on indexed columns only, exact-match text filters instead of "list every
distinct value" filters.
"""
from __future__ import annotations

import json
from datetime import datetime
from datetime import timezone as dt_timezone
from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html

from sessions_app import selectors
from sessions_app.models import AdkAppState, AdkEvent, AgentTransition, Checkpoint, Message, Round, Session

LATEST_MESSAGES = 20
LATEST_ROUNDS = 10


def json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def pretty_json(value: Any):
    return format_html('<pre class="json">{}</pre>', json_text(value))


def json_display(field: str):
    """An admin column or read-only field showing model field ``field`` as indented JSON."""

    @admin.display(description=field)
    def display(self, obj):
        return pretty_json(getattr(obj, field))

    return display


def content_text(content: Any) -> str:
    """A message's content as staff read it: the string, the text of text parts, indented JSON
    for any other part."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"] if part.get("type") == "text" and isinstance(part.get("text"), str)
            else json.dumps(part, indent=2, ensure_ascii=False)
            for part in content
        )
    return json.dumps(content, indent=2, ensure_ascii=False)


class InputFilter(admin.SimpleListFilter):
    """A text box for an exact match on an indexed column (no DISTINCT scan to list choices)."""

    template = "admin/input_filter.html"

    def lookups(self, request, model_admin):
        return ((None, None),)  # one dummy choice so the admin shows the filter

    def choices(self, changelist):
        yield {
            "query_parts": [
                (key, value)
                for key, value in changelist.get_filters_params().items()
                if key != self.parameter_name
                for value in (value if isinstance(value, list) else [value])
            ],
            "current": self.value() or "",
        }

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(**{self.parameter_name: self.value()})
        return queryset


class AgentFilter(InputFilter):
    title = "agent id"
    parameter_name = "agent_id"


class WorkspaceFilter(InputFilter):
    title = "workspace id"
    parameter_name = "workspace_id"


class RoleFilter(InputFilter):
    title = "role"
    parameter_name = "role"


class EndedFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "ended"

    def lookups(self, request, model_admin):
        return (("no", "Live"), ("yes", "Ended"))

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(ended_at__isnull=self.value() == "no")
        return queryset


class CappedPaginator(Paginator):
    """Counts at most ``cap`` rows, so a changelist page costs the same at any table size.

    The count is ``COUNT(*)`` over a subquery with ``LIMIT cap + 1``; past the cap the changelist
    shows "10,000+" and pages up to the cap. Rows beyond it are reached by narrowing the filters.
    ``list_max_show_all`` must stay below the cap: "Show all" lists every filtered row.
    """

    cap = 10_000

    @cached_property
    def counted(self) -> int:
        return self.object_list.order_by()[: self.cap + 1].count()

    @cached_property
    def count(self) -> int:
        return min(self.counted, self.cap)

    @property
    def capped(self) -> bool:
        return self.counted > self.cap

    @property
    def count_label(self) -> str:
        """The count as staff read it (templates/admin/pagination.html, search_form.html)."""
        return f"{self.cap:,}+" if self.capped else f"{self.count:,}"


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only for everyone, superusers included; counts capped for big tables."""

    paginator = CappedPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # facet counts are a COUNT per filter choice
    list_per_page = 50

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def history_url(model, session: Session) -> str:
    return reverse(f"admin:sessions_app_{model._meta.model_name}_changelist") + f"?session__id__exact={session.pk}"


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    list_display = (
        "session_id", "user_id", "tenant", "agent_id", "workspace_id", "message_count", "created_at", "updated_at", "ended_at",
    )
    list_select_related = ("tenant",)
    list_filter = ("tenant", EndedFilter, AgentFilter, WorkspaceFilter, "created_at", "updated_at")
    # Exact, case-sensitive: served by the user_id and session_id indexes ("=user_id" would compile
    # to UPPER(user_id) = UPPER(%s), which no index serves).
    search_fields = ("user_id__exact", "session_id__exact")
    search_help_text = "Exact user id or session id (case-sensitive). A user id and a session id together find that session."
    ordering = ("-id",)
    fieldsets = (
        (None, {"fields": ("tenant", "user_id", "session_id", "agent_id", "workspace_id", "message_count",
                           "created_at", "updated_at", "ended_at", "version", "metadata_json")}),
        ("Latest messages", {"fields": ("latest_messages",)}),
        ("Rounds", {"fields": ("latest_rounds",)}),
        ("Checkpoints", {"fields": ("checkpoints",)}),
        ("Agent transitions", {"fields": ("transitions",)}),
        ("Working state", {"fields": ("working_state",)}),
    )
    readonly_fields = ("message_count", "metadata_json", "latest_messages", "latest_rounds", "checkpoints",
                       "transitions", "working_state", "app_name", "framework", "adk_events")

    def get_fieldsets(self, request, obj=None):
        """A Google ADK session shows its events and state as ADK has them, not REST messages."""
        if obj is None or obj.framework != "adk":
            return self.fieldsets
        return (
            (None, {"fields": ("tenant", "app_name", "framework", "user_id", "session_id", "message_count",
                               "created_at", "updated_at", "version")}),
            ("ADK events and state", {"fields": ("adk_events",)}),
        )

    @admin.display(description="messages", ordering="last_seq")
    def message_count(self, obj: Session) -> int:
        return obj.message_count

    metadata_json = json_display("metadata")

    @admin.display(description="")
    def latest_messages(self, obj: Session):
        return render_to_string("admin/sessions_app/session/latest_messages.html", {
            "messages": [(m, content_text(m.content)) for m in selectors.message_recent(session=obj, limit=LATEST_MESSAGES)],
            "total": obj.message_count,
            "history_url": history_url(Message, obj),
        })

    @admin.display(description="")
    def latest_rounds(self, obj: Session):
        rounds = list(Round.objects.filter(session=obj).order_by("-round_id")[:LATEST_ROUNDS])
        return render_to_string("admin/sessions_app/session/json_rows.html", {
            "rows": [(f"Round {r.round_id}", r.updated_at, json_text(r.state)) for r in rounds],
            "all_url": history_url(Round, obj), "empty": "No rounds.",
        })

    @admin.display(description="")
    def checkpoints(self, obj: Session):
        checkpoints = list(Checkpoint.objects.filter(session=obj).order_by("-id")[:LATEST_ROUNDS])
        return render_to_string("admin/sessions_app/session/json_rows.html", {
            "rows": [(c.label, c.created_at, json_text(c.state)) for c in checkpoints],
            "all_url": history_url(Checkpoint, obj), "empty": "No checkpoints.",
        })

    @admin.display(description="")
    def transitions(self, obj: Session):
        return render_to_string("admin/sessions_app/session/transitions.html", {
            "transitions": selectors.transition_list(session=obj)[:50], "all_url": history_url(AgentTransition, obj),
        })

    @admin.display(description="")
    def working_state(self, obj: Session):
        return pretty_json(selectors.working_state_get(session=obj))

    @admin.display(description="")
    def adk_events(self, obj: Session):
        # The page's template tag (project level) merges in the user: state, which is user data.
        return render_to_string("admin/sessions_app/session/adk.html", {
            "session": obj, "all_url": history_url(AdkEvent, obj),
        })


class SessionChildAdmin(ReadOnlyAdmin):
    """Children of a session, reached from the session page (``?session__id__exact=<pk>``)."""

    list_display_links = None
    search_fields = ()

    @admin.display(description="session", ordering="session_id")
    def session_link(self, obj):
        url = reverse("admin:sessions_app_session_change", args=[obj.session_id])
        return format_html('<a href="{}">Session #{}</a>', url, obj.session_id)


@admin.register(Message)
class MessageAdmin(SessionChildAdmin):
    list_display = ("seq", "session_link", "role", "name", "type", "content_preview", "created_at")
    list_display_links = ("seq",)
    list_filter = (RoleFilter,)
    ordering = ("session_id", "seq")  # the (session, seq) unique index
    list_per_page = 100
    fields = ("session_link", "seq", "client_id", "role", "name", "type", "status", "content_json", "metadata_json",
              "usage_json", "created_at")
    readonly_fields = ("session_link", "content_json", "metadata_json", "usage_json")

    @admin.display(description="content")
    def content_preview(self, obj: Message) -> str:
        text = " ".join(content_text(obj.content).split())
        return text if len(text) <= 120 else text[:119] + "…"

    content_json = json_display("content")

    metadata_json = json_display("metadata")

    usage_json = json_display("usage")


@admin.register(Round)
class RoundAdmin(SessionChildAdmin):
    list_display = ("round_id", "session_link", "version", "created_at", "updated_at")
    list_display_links = ("round_id",)
    ordering = ("session_id", "round_id")
    fields = ("session_link", "round_id", "version", "created_at", "updated_at", "state_json")
    readonly_fields = ("session_link", "state_json")

    state_json = json_display("state")


@admin.register(Checkpoint)
class CheckpointAdmin(SessionChildAdmin):
    list_display = ("id", "session_link", "label", "created_at")
    list_display_links = ("id",)
    ordering = ("session_id", "id")
    fields = ("session_link", "label", "created_at", "state_json")
    readonly_fields = ("session_link", "state_json")

    state_json = json_display("state")


@admin.register(AgentTransition)
class AgentTransitionAdmin(SessionChildAdmin):
    list_display = ("id", "session_link", "from_agent", "to_agent", "reason", "created_at")
    list_display_links = ("id",)
    ordering = ("session_id", "id")
    fields = ("session_link", "from_agent", "to_agent", "reason", "metadata_json", "created_at")
    readonly_fields = ("session_link", "metadata_json")

    metadata_json = json_display("metadata")


# --- Google ADK -----------------------------------------------------------------------------


@admin.register(AdkEvent)
class AdkEventAdmin(SessionChildAdmin):
    list_display = ("seq", "session_link", "author", "text_preview", "event_time")
    list_display_links = ("seq",)
    ordering = ("session_id", "seq")  # the (session, seq) unique index
    list_per_page = 100
    fields = ("session_link", "seq", "event_id", "invocation_id", "author", "event_time", "text", "event_json")
    readonly_fields = ("session_link", "event_time", "event_json")

    @admin.display(description="text")
    def text_preview(self, obj: AdkEvent) -> str:
        text = " ".join(obj.text.split())
        return text if len(text) <= 120 else text[:119] + "…"

    @admin.display(description="time", ordering="timestamp")
    def event_time(self, obj: AdkEvent):
        return datetime.fromtimestamp(obj.timestamp, tz=dt_timezone.utc)

    @admin.display(description="event (its user: delta is user data, shown on the session page)")
    def event_json(self, obj: AdkEvent):
        return pretty_json(json.loads(obj.data))


@admin.register(AdkAppState)
class AdkAppStateAdmin(ReadOnlyAdmin):
    """ADK's app: state, one row per tenant and app."""

    list_display = ("app_name", "tenant", "updated_at")
    list_select_related = ("tenant",)
    list_filter = ("tenant",)
    search_fields = ("app_name__exact",)
    ordering = ("tenant", "app_name")
    fields = ("tenant", "app_name", "updated_at", "state_json")
    readonly_fields = ("state_json",)

    @admin.display(description="state")
    def state_json(self, obj: AdkAppState):
        return pretty_json(json.loads(obj.state))
