"""What a session holds, each in its own list: messages, rounds, checkpoints, agent transitions.
A row is found by user, session id or tenant through its session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

from agentstate.admin.display import content_text, json_display, one_line, pretty_json, previewed, shown
from agentstate.admin.filters import InputFilter, NarrowedDateFilter, UserIdFilter, WordsFilter
from agentstate.admin.options import ReadOnlyAdmin
from agentstate.holds.admin import HeldPage
from agentstate.holds.selectors import holds_of
from agentstate.tenancy.models import Tenant
from sessions_app.admin.sessions import SessionChild, SessionLabelTitle, framework_section, session_label
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
from sessions_app.selectors.search import MESSAGE_INDEX


def sessions_where(**lookups: Any) -> QuerySet[Session, Any]:
    """The pks of the sessions matching ``lookups``, as a subquery. A child row (message, round,
    ...) is found by user, session id or tenant through its session: the session table's indexes
    serve the lookup and the child's (session, ...) index the rest, so no child table needs an
    index of its own on those columns (every append would pay for it)."""
    return Session.objects.filter(**lookups).values("pk")


class SessionUserIdFilter(UserIdFilter):
    """A child row's user id, through its session (the session_user_id index)."""

    def filter(self, queryset: QuerySet[Any], value: str) -> QuerySet[Any]:
        return queryset.filter(session__in=sessions_where(user_id=value))


class SessionIdFilter(InputFilter):
    """A child row's session id (the API's, not the database number), through its session (the
    session_session_id index)."""

    title = "session id"
    parameter_name = "session_id"

    def filter(self, queryset: QuerySet[Any], value: str) -> QuerySet[Any]:
        return queryset.filter(session__in=sessions_where(session_id=value))


class SessionTenantFilter(admin.SimpleListFilter):
    """A child row's tenant, through its session (the session_tenant_created index); the same
    parameter as the session list's tenant filter."""

    title = "tenant"
    parameter_name = "tenant__id__exact"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(str(pk), slug) for pk, slug in Tenant.objects.order_by("slug").values_list("pk", "slug")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        if not value.isdigit():
            return queryset.none()
        return queryset.filter(session__in=sessions_where(tenant_id=int(value)))


class RoleFilter(InputFilter):
    """Roles as choices (any other role still filters by its URL value). Within a session the
    (session, role, seq) index serves it; across sessions the page walks (session, seq) in order
    and stops at the page size, which common roles fill quickly."""

    title = "role"
    parameter_name = "role"
    max_length = 32
    template = "admin/filter.html"
    roles = ("user", "assistant", "system", "tool")

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [(role, role) for role in self.roles]

    choices = admin.SimpleListFilter.choices  # links, not InputFilter's text box


class MessageWordsFilter(WordsFilter):
    index = MESSAGE_INDEX


class SessionChildAdmin(HeldPage, SessionLabelTitle, ReadOnlyAdmin):
    """Children of a session, reached from the session page (``?session__id__exact=<pk>``); each
    row names its session as ``tenant / user / session``, joined in the page's one query."""

    list_display_links: tuple[str, ...] | None = None
    # Exact user id or session id, matched on the session (``search``): the session table's
    # user_id and session_id indexes serve it.
    search_fields = ("session__user_id__exact", "session__session_id__exact")
    search_help_text = (
        "Exact user id or session id of the session: case, spaces and invisible characters count. "
        "Narrow with the filters (tenant, user id, session id)."
    )
    list_filter: ClassVar[tuple[Any, ...]] = (SessionTenantFilter, SessionUserIdFilter, SessionIdFilter)

    # Columns a changelist never shows (deferred) and the ones it shows the start of (``previewed``).
    list_deferred: tuple[str, ...] = ()
    list_previewed: tuple[str, ...] = ()

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        match = request.resolver_match
        if match is not None and (match.url_name or "").endswith("_changelist"):
            queryset = previewed(queryset.defer(*self.list_deferred), *self.list_previewed)
        return queryset

    def holds_of_object(self, obj: SessionChild) -> QuerySet[Any]:
        return holds_of(tenant=obj.session.tenant, user_id=obj.session.user_id, session_pk=obj.session.pk)

    @admin.display(description="session", ordering="session_id")
    def session_link(self, obj: SessionChild) -> SafeString:
        return session_label(obj.session)

    def search(self, queryset: QuerySet[Any], term: str, search_fields: Sequence[str]) -> QuerySet[Any]:
        """Through the session, like the filters: the session table's indexes find it."""
        return queryset.filter(session__in=Session.objects.filter(Q(user_id=term) | Q(session_id=term)).values("pk"))


@admin.register(Message)
class MessageAdmin(SessionChildAdmin):
    list_display = ("seq", "session_link", "role", "name", "type", "content_preview", "created_at")
    list_display_links = ("seq",)
    list_filter = (
        MessageWordsFilter,
        *SessionChildAdmin.list_filter,
        RoleFilter,
        ("created_at", NarrowedDateFilter),
    )
    ordering = ("session_id", "seq")  # the (session, seq) unique index
    list_per_page = 100
    fields = (
        "session_link",
        "seq",
        "client_id",
        "role",
        "name",
        "type",
        "status",
        "content_json",
        "metadata_json",
        "usage_json",
        "created_at",
    )
    readonly_fields = ("session_link", "content_json", "metadata_json", "usage_json")
    list_deferred = ("metadata", "usage")
    list_previewed = ("content",)

    @admin.display(description="content")
    def content_preview(self, obj: Message) -> str:
        section = framework_section(obj.session)  # its framework's reading (an SDK item's text)
        if section and section.message_preview:
            return one_line(section.message_preview(obj))
        return one_line(shown(obj.content_start, obj.content_length, content_text))  # type: ignore[attr-defined]

    @admin.display(description="content")
    def content_json(self, obj: Message) -> SafeString:
        section = framework_section(obj.session)
        return pretty_json(section.message_content(obj.content) if section and section.message_content else obj.content)

    def object_title(self, obj: Message) -> str:
        return f"Message {obj.seq}"

    metadata_json = json_display("metadata")

    usage_json = json_display("usage")


@admin.register(Round)
class RoundAdmin(SessionChildAdmin):
    list_display = ("round_id", "session_link", "version", "created_at", "updated_at")
    list_display_links = ("round_id",)
    list_filter = (*SessionChildAdmin.list_filter, ("updated_at", NarrowedDateFilter))
    ordering = ("session_id", "round_id")
    fields = ("session_link", "round_id", "version", "created_at", "updated_at", "state_json")
    readonly_fields = ("session_link", "state_json")

    def object_title(self, obj: Round) -> str:
        return f"Round {obj.round_id}"

    state_json = json_display("state")


@admin.register(Checkpoint)
class CheckpointAdmin(SessionChildAdmin):
    list_display = ("id", "session_link", "label", "created_at")
    list_display_links = ("id",)
    list_filter = (*SessionChildAdmin.list_filter, ("created_at", NarrowedDateFilter))
    ordering = ("session_id", "id")
    fields = ("session_link", "label", "created_at", "state_json")
    readonly_fields = ("session_link", "state_json")

    state_json = json_display("state")


@admin.register(AgentTransition)
class AgentTransitionAdmin(SessionChildAdmin):
    list_display = ("id", "session_link", "from_agent", "to_agent", "reason", "created_at")
    list_display_links = ("id",)
    list_filter = (*SessionChildAdmin.list_filter, ("created_at", NarrowedDateFilter))
    ordering = ("session_id", "id")
    fields = ("session_link", "from_agent", "to_agent", "reason", "metadata_json", "created_at")
    readonly_fields = ("session_link", "metadata_json")

    metadata_json = json_display("metadata")
