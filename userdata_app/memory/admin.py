"""Memory items, browsed only (user data: erased with the user's other data)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from agentstate.admin.display import pretty_json
from agentstate.admin.filters import UserIdFilter, WordsFilter
from agentstate.admin.options import ReadOnlyAdmin
from agentstate.holds.admin import HeldPage
from agentstate.holds.selectors import holds_of
from agentstate.subject_data import rows_derived_from
from userdata_app.memory.models import MemoryItem
from userdata_app.memory.selectors import MEMORY_INDEX, memory_items_kept_for_review


class MemoryWordsFilter(WordsFilter):
    index = MEMORY_INDEX


class DerivedFromSessionFilter(admin.SimpleListFilter):
    """``?derived_from_session=<pk>``: the memories made from a session (its page links here)."""

    title = "made from session"
    parameter_name = "derived_from_session"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        # Reached by the session page's link, not picked from a list: shown only while applied.
        value = request.GET.get(self.parameter_name)
        return [(value, f"session #{value}")] if value else []

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value is None or not value.isdigit():
            return queryset
        return queryset.filter(pk__in=rows_derived_from(MemoryItem, int(value)).values("pk"))


class KeptForReviewFilter(admin.SimpleListFilter):
    """``?kept_for_review=1``: the memories the tenant's memory policy kept when the last session
    they were made from went (``MemoryPolicy.keep_derived``), for staff to review and delete."""

    title = "kept for review"
    parameter_name = "kept_for_review"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("1", "kept for review")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() != "1":
            return queryset
        return queryset.filter(pk__in=memory_items_kept_for_review().values("pk"))


@admin.register(MemoryItem)
class MemoryItemAdmin(HeldPage, ReadOnlyAdmin):
    """An agent's long-term memory about a person (LangGraph's store, ADK's memory service)."""

    list_display = ("namespace", "key", "user_id", "tenant", "updated_at", "expires_at")
    list_select_related = ("tenant",)
    list_filter = (MemoryWordsFilter, "tenant", UserIdFilter, DerivedFromSessionFilter, KeptForReviewFilter)
    search_fields = ("user_id__exact",)
    ordering = ("-id",)
    fields = (
        "tenant",
        "user_id",
        "namespace",
        "key",
        "created_at",
        "updated_at",
        "expires_at",
        "sources_shown",
        "value_json",
    )
    readonly_fields = ("value_json", "sources_shown")

    def holds_of_object(self, obj: MemoryItem):
        return holds_of(tenant=obj.tenant, user_id=obj.user_id)

    @admin.display(description="made from")
    def sources_shown(self, obj: MemoryItem) -> SafeString | str:
        """Each source: its session (a link while the session is kept here), the ref within it."""
        sources = list(obj.sources.order_by("pk"))
        if not sources:
            return "no session (written outside one)"

        def name(source) -> SafeString:
            session = source.session_id or source.thread_id
            text = format_html("{} {}", "thread" if source.thread_id else "session", session)
            if source.linked_session_id is not None:
                url = reverse("admin:sessions_app_session_change", args=[source.linked_session_id])
                text = format_html('<a href="{}">{}</a>', url, text)
            ref = format_html(", {}", source.ref) if source.ref else ""
            gone = " (session deleted; kept for review)" if source.session_deleted else ""
            return format_html("{}{}{}", text, ref, gone)

        return format_html_join(mark_safe("<br>"), "{}", ((name(source),) for source in sources))

    @admin.display(description="value")
    def value_json(self, obj: MemoryItem) -> SafeString:
        return pretty_json(obj.value)
