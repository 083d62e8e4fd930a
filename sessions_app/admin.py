"""Staff browse process state here; nothing is edited or deleted from the admin (history is
append-only; deletion goes through the API or an erasure request).

Built for big tables: counts capped at ``CappedPaginator.cap`` rows, no per-row queries, exact,
case-sensitive searches on indexed columns only, exact-match text filters instead of "list every
distinct value" filters.

Identifiers are matched and shown exactly as the API stored them: a search or filter value is
never stripped or split, is checked by the API's ``clean_identifier``, and ids are displayed with
their invisible characters spelled out (``identifier_visible``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast, Length, Substr
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from agentstate.db_router import replica_reads
from agentstate.exceptions import InvalidInput
from agentstate.tenancy.models import Tenant
from agentstate.validation import IDENTIFIER_MAX_LENGTH, clean_identifier, identifier_visible, timestamp_datetime
from sessions_app import selectors, services
from sessions_app.langgraph import selectors as langgraph_selectors
from sessions_app.models import (
    AdkAppState,
    AdkEvent,
    AgentTransition,
    Checkpoint,
    LangGraphCheckpoint,
    LangGraphThread,
    LangGraphWrite,
    Message,
    RetentionPolicy,
    RetentionRun,
    Round,
    Session,
)

LATEST_MESSAGES = 20
LATEST_ROUNDS = 10
LATEST_FORKS = 50


def json_text(value: Any) -> str:
    """``value`` as indented JSON for staff; a lone surrogate stored before the input rules refused
    it is shown as its escape (the page could not be encoded with it)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, indent=2, ensure_ascii=True, sort_keys=True)
    return text


def pretty_json(value: Any):
    return format_html('<pre class="json">{}</pre>', json_text(value))


def json_display(field: str):
    """An admin column or read-only field showing model field ``field`` as indented JSON."""

    @admin.display(description=field)
    def display(self, obj):
        return pretty_json(getattr(obj, field))

    return display


PREVIEW_CHARS = 2_000  # of a value a list row or the session page shows; its own page shows it whole


def previewed(queryset: QuerySet, *fields: str) -> QuerySet:
    """``queryset`` without ``fields``' values: each comes as its first ``PREVIEW_CHARS`` characters
    of text (``<field>_start``) and its length (``<field>_length``), cut by the database. A page of
    messages of 5 MiB each once rendered 105 MB of HTML from a worker holding a gigabyte."""
    text = {field: Cast(field, TextField()) for field in fields}
    return queryset.defer(*fields).annotate(
        **{f"{field}_start": Substr(value, 1, PREVIEW_CHARS) for field, value in text.items()},
        **{f"{field}_length": Length(value) for field, value in text.items()},
    )


def shown(start: str | None, length: int | None, render: Callable[[Any], str]) -> str:
    """A JSON value of ``previewed`` rows as staff read it: ``render``ed when its start is all of it,
    else that start as stored and how long the whole is."""
    if start is None or length is None:
        return render(None)
    if length <= PREVIEW_CHARS:
        return render(json.loads(start))
    return f"{start}… ({length:,} characters in all: the whole value is on its own page)"


def content_text(content: Any) -> str:
    """A message's content as staff read it: the string, the text of text parts, indented JSON
    for any other part."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            if part.get("type") == "text" and isinstance(part.get("text"), str)
            else json.dumps(part, indent=2, ensure_ascii=False)
            for part in content
        )
    return json.dumps(content, indent=2, ensure_ascii=False)


def one_line(text: str) -> str:
    """``text`` on one line of at most 120 characters, for a list column."""
    text = " ".join(text.split())
    return text if len(text) <= 120 else text[:119] + "…"


_ESCAPE = re.compile(r"(⟦U\+[0-9A-F]{4,6}⟧)")


def identifier_html(value: str, *, length: bool = True):
    """``value`` as staff must read it before acting on it: invisible characters spelled out and
    highlighted, with its length in characters."""
    parts = _ESCAPE.split(identifier_visible(value))  # odd positions are the escapes
    shown = format_html_join(
        "",
        "{}",
        (
            (format_html('<mark class="identifier-escape">{}</mark>', part) if i % 2 else part,)
            for i, part in enumerate(parts)
        ),
    )
    if not length:
        return format_html('<code class="identifier">{}</code>', shown)
    return format_html(
        '<code class="identifier">{}</code> <span class="identifier-length">({} character{})</span>',
        shown,
        len(value),
        "" if len(value) == 1 else "s",
    )


def identifier_display(field: str, *, description: str, length: bool = False):
    """An admin column or read-only field showing model field ``field`` through ``identifier_html``."""

    @admin.display(description=description, ordering=field)
    def display(self, obj):
        value = getattr(obj, field)
        return identifier_html(value, length=length) if value else "—"

    return display


def identifier_is_valid(request, value: str, *, field: str, max_length: int = IDENTIFIER_MAX_LENGTH) -> bool:
    """Whether ``value`` could be a stored identifier (the API's own check); if not, tell the
    user why nothing matches. A NUL, for one, would reach PostgreSQL as a server error."""
    try:
        clean_identifier(value, field=field, max_length=max_length)
    except InvalidInput as exc:
        messages.warning(request, f"{exc.message} No identifier can match.")
        return False
    return True


class InputFilter(admin.SimpleListFilter):
    """A text box for an exact match on an indexed column (no DISTINCT scan to list choices),
    the value taken exactly as typed."""

    template = "admin/input_filter.html"
    max_length = IDENTIFIER_MAX_LENGTH  # the API's limit for this identifier

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
        value = self.value()
        if not value:
            return queryset
        if not identifier_is_valid(request, value, field=self.parameter_name, max_length=self.max_length):
            return queryset.none()
        return self.filter(queryset, value)

    def filter(self, queryset, value: str):
        return queryset.filter(**{str(self.parameter_name): value})


class UserIdFilter(InputFilter):
    title = "user id"
    parameter_name = "user_id"


def sessions_where(**lookups):
    """The pks of the sessions matching ``lookups``, as a subquery. A child row (message, round,
    ...) is found by user, session id or tenant through its session: the session table's indexes
    serve the lookup and the child's (session, ...) index the rest, so no child table needs an
    index of its own on those columns (every append would pay for it)."""
    return Session.objects.filter(**lookups).values("pk")


class SessionUserIdFilter(UserIdFilter):
    """A child row's user id, through its session (the session_user_id index)."""

    def filter(self, queryset, value: str):
        return queryset.filter(session__in=sessions_where(user_id=value))


class SessionIdFilter(InputFilter):
    """A child row's session id (the API's, not the database number), through its session (the
    session_session_id index)."""

    title = "session id"
    parameter_name = "session_id"

    def filter(self, queryset, value: str):
        return queryset.filter(session__in=sessions_where(session_id=value))


class SessionTenantFilter(admin.SimpleListFilter):
    """A child row's tenant, through its session (the session_tenant_created index); the same
    parameter as the session list's tenant filter."""

    title = "tenant"
    parameter_name = "tenant__id__exact"

    def lookups(self, request, model_admin):
        return [(str(pk), slug) for pk, slug in Tenant.objects.order_by("slug").values_list("pk", "slug")]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        if not value.isdigit():
            return queryset.none()
        return queryset.filter(session__in=sessions_where(tenant_id=int(value)))


class NarrowedDateFilter(admin.DateFieldListFilter):
    """A date filter on a child table, applied once the list is narrowed to a user or a session.
    Child tables have no index on time (every append would pay for one); within one user's or
    one session's rows the (session, ...) indexes bound the scan, across the whole table nothing
    would. Without that narrowing the filter is left off, and the page says why."""

    narrowing = ("user_id", "session_id", "session__id__exact")

    def queryset(self, request, queryset):
        if self.used_parameters and not any(request.GET.get(name) for name in self.narrowing):
            messages.warning(
                request,
                f"The {self.title} filter applies once a user id or a session id is chosen: "
                "without one it would read the whole table.",
            )
            return queryset
        return super().queryset(request, queryset)


class AgentFilter(InputFilter):
    title = "agent id"
    parameter_name = "agent_id"


class WorkspaceFilter(InputFilter):
    title = "workspace id"
    parameter_name = "workspace_id"


class RoleFilter(InputFilter):
    """Roles as choices (any other role still filters by its URL value). Within a session the
    (session, role, seq) index serves it; across sessions the page walks (session, seq) in order
    and stops at the page size, which common roles fill quickly."""

    title = "role"
    parameter_name = "role"
    max_length = 32
    template = "admin/filter.html"
    roles = ("user", "assistant", "system", "tool")

    def lookups(self, request, model_admin):
        return [(role, role) for role in self.roles]

    choices = admin.SimpleListFilter.choices  # links, not InputFilter's text box


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
    object_list: QuerySet[Any]  # the changelist's queryset (Paginator types any sequence)

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
    """View-only for everyone, superusers included; counts capped for big tables; searches
    match the whole term exactly."""

    paginator = CappedPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # facet counts are a COUNT per filter choice
    list_per_page = 50

    @replica_reads  # a changelist tolerates lag (docs/SCALING.md): rendered here so its rows are read there
    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        return response.render() if hasattr(response, "render") else response

    def get_search_results(self, request, queryset, search_term):
        """Rows where one of ``search_fields`` (each an indexed ``<column>__exact``) equals the
        whole term as typed. Django's default splits the term on whitespace and unquotes the
        parts: an id holding a space or a no-break space could not be found, or found another."""
        search_fields = self.get_search_fields(request)
        if not (search_fields and search_term):
            return queryset, False
        if not identifier_is_valid(request, search_term, field="search"):
            return queryset.none(), False
        return self.search(queryset, search_term, search_fields), False

    def search(self, queryset, term: str, search_fields):
        return queryset.filter(Q.create([(field, term) for field in search_fields], connector=Q.OR))

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def history_url(model, session: Session) -> str:
    return reverse(f"admin:sessions_app_{model._meta.model_name}_changelist") + f"?session__id__exact={session.pk}"


# Changelists listing one user's rows, filtered by ``tenant__id__exact`` and ``user_id``, as
# (label, URL name): the session page links a user id to each. userdata_app's admin adds its user
# data (this app does not know it).
USER_CHANGELISTS: list[tuple[str, str]] = [("sessions", "admin:sessions_app_session_changelist")]


def user_url(url_name: str, *, tenant_pk: int, user_id: str) -> str:
    query: dict[str, int | str] = {"tenant__id__exact": tenant_pk, "user_id": user_id}
    return reverse(url_name) + "?" + urlencode(query)


def user_links(*, tenant_pk: int, user_id: str):
    """Links to everything the admin lists about one user (``USER_CHANGELISTS``)."""
    return format_html_join(
        " · ",
        '<a href="{}">{}</a>',
        ((user_url(url_name, tenant_pk=tenant_pk, user_id=user_id), label) for label, url_name in USER_CHANGELISTS),
    )


def session_label_text(session: Session) -> str:
    """``tenant / user / session`` as staff tell sessions apart (a page title). Not ``__str__``:
    the admin log keeps that, and a user id is personal data."""
    app = f" (app {identifier_visible(session.app_name)})" if session.app_name else ""
    return (
        f"{session.tenant.slug} / {identifier_visible(session.user_id)} / {identifier_visible(session.session_id)}{app}"
    )


def session_label(session: Session):
    """``session_label_text`` linked: the tenant to its sessions, the user id to that user's
    sessions, the session id to the session's page. Needs ``session.tenant`` loaded (select it)."""
    sessions = "admin:sessions_app_session_changelist"
    return format_html(
        '<span class="session-label"><a href="{}">{}</a> / <a href="{}">{}</a> / <a href="{}">{}</a>{}</span>',
        reverse(sessions) + "?" + urlencode({"tenant__id__exact": session.tenant_id}),
        session.tenant.slug,
        user_url(sessions, tenant_pk=session.tenant_id, user_id=session.user_id),
        identifier_html(session.user_id, length=False),
        reverse("admin:sessions_app_session_change", args=[session.pk]),
        identifier_html(session.session_id, length=False),
        format_html(" (app {})", identifier_html(session.app_name, length=False)) if session.app_name else "",
    )


class SessionLabelTitle:
    """Change pages whose title names the session as ``tenant / user / session`` (linked, through
    templates/admin/sessions_app/change_form.html) instead of ``__str__``'s database number."""

    def object_title(self, obj) -> str:
        return str(obj)

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related(
                "tenant" if self.model is Session else "session__tenant"  # the label's, in the page's one query
            )
        )

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            session = obj if isinstance(obj, Session) else obj.session
            title = self.object_title(obj)
            context.update(
                subtitle=f"{title} · {session_label_text(session)}" if title else session_label_text(session),
                subtitle_html=format_html("{} · {}", title, session_label(session))
                if title
                else session_label(session),
            )
        return super().render_change_form(request, context, add, change, form_url, obj)


@admin.register(Session)
class SessionAdmin(SessionLabelTitle, ReadOnlyAdmin):
    list_display = (
        "session_id",
        "user_id_shown",
        "tenant",
        "agent_id",
        "workspace_id",
        "messages",
        "created_at",
        "updated_at",
        "ended_at",
    )
    list_select_related = ("tenant",)
    list_filter = ("tenant", EndedFilter, UserIdFilter, AgentFilter, WorkspaceFilter, "created_at", "updated_at")
    # Exact, case-sensitive: served by the user_id and session_id indexes ("=user_id" would compile
    # to UPPER(user_id) = UPPER(%s), which no index serves).
    search_fields = ("user_id__exact", "session_id__exact")
    search_help_text = (
        "Exact user id or session id: case, spaces and invisible characters count. "
        "To find one user's session, search the session id and filter by user id."
    )
    ordering = ("-id",)
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "tenant",
                    "user_id_linked",
                    "session_id",
                    "agent_id",
                    "workspace_id",
                    "messages",
                    "last_seq",
                    "history_generation",
                    "created_at",
                    "updated_at",
                    "ended_at",
                    "version",
                    "metadata_json",
                )
            },
        ),
        ("Forks", {"fields": ("forked_from", "forks")}),
        ("Latest messages", {"fields": ("latest_messages",)}),
        ("Rounds", {"fields": ("latest_rounds",)}),
        ("Checkpoints", {"fields": ("checkpoints",)}),
        ("Agent transitions", {"fields": ("transitions",)}),
        ("Working state", {"fields": ("working_state",)}),
    )
    readonly_fields = (
        "user_id_linked",
        "messages",
        "last_seq",
        "history_generation",
        "forked_from",
        "forks",
        "metadata_json",
        "latest_messages",
        "latest_rounds",
        "checkpoints",
        "transitions",
        "working_state",
        "app_name",
        "framework",
        "adk_events",
    )

    # An ADK session's events and state, rendered by the project level (agentstate_site wires it in
    # its AppConfig.ready): it merges in the user: state, which is user data, a layer above this app.
    adk_section: Callable[[Session, str], str] | None = None

    def get_fieldsets(self, request, obj=None):
        """A Google ADK session shows its events and state as ADK has them, not REST messages."""
        if obj is None or obj.framework != "adk" or self.adk_section is None:
            return self.fieldsets
        return (
            (
                None,
                {
                    "fields": (
                        "tenant",
                        "app_name",
                        "framework",
                        "user_id_linked",
                        "session_id",
                        "created_at",
                        "updated_at",
                        "version",
                    )
                },
            ),
            ("ADK events and state", {"fields": ("adk_events",)}),
        )

    user_id_shown = identifier_display("user_id", description="user id")

    def object_title(self, obj: Session) -> str:
        return ""  # the session itself: its label is the title

    @admin.display(description="user id")
    def user_id_linked(self, obj: Session):
        """The user id, spelled out, with links to everything else the admin holds about that user."""
        return format_html(
            "{} — {}", identifier_html(obj.user_id), user_links(tenant_pk=obj.tenant_id, user_id=obj.user_id)
        )

    # Named apart from the model's message_count column, whose verbose name ("message count")
    # the admin would otherwise use as the header of a narrow column.
    @admin.display(description="messages", ordering="message_count")
    def messages(self, obj: Session) -> int:
        return obj.message_count

    @admin.display(description="forked from")
    def forked_from(self, obj: Session):
        if obj.forked_from_seq is None:
            return "Not a fork."
        point = f"up to message {obj.forked_from_seq}, round {obj.forked_from_round}"
        if obj.parent_id is None:
            return f"{obj.forked_from_session_id} (deleted), {point}"
        url = reverse("admin:sessions_app_session_change", args=[obj.parent_id])
        return format_html('<a href="{}">{}</a>, {}', url, obj.forked_from_session_id, point)

    @admin.display(description="forks")
    def forks(self, obj: Session):
        forks = list(Session.objects.filter(parent=obj).order_by("id").values_list("pk", "session_id")[:LATEST_FORKS])
        if not forks:
            return "No forks."
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            ((reverse("admin:sessions_app_session_change", args=[pk]), sid) for pk, sid in forks),
        )

    metadata_json = json_display("metadata")

    @admin.display(description="")
    def latest_messages(self, obj: Session):
        newest = previewed(Message.objects.filter(session=obj).defer("metadata", "usage").order_by("-seq"), "content")
        return render_to_string(
            "admin/sessions_app/session/latest_messages.html",
            {
                "messages": [
                    (m, shown(m.content_start, m.content_length, content_text))
                    for m in reversed(newest[:LATEST_MESSAGES])
                ],
                "total": obj.message_count,
                "history_url": history_url(Message, obj),
            },
        )

    @admin.display(description="")
    def latest_rounds(self, obj: Session):
        rounds = previewed(Round.objects.filter(session=obj).order_by("-round_id"), "state")[:LATEST_ROUNDS]
        return render_to_string(
            "admin/sessions_app/session/json_rows.html",
            {
                "rows": [
                    (f"Round {r.round_id}", r.updated_at, shown(r.state_start, r.state_length, json_text))
                    for r in rounds
                ],
                "all_url": history_url(Round, obj),
                "empty": "No rounds.",
            },
        )

    @admin.display(description="")
    def checkpoints(self, obj: Session):
        checkpoints = previewed(Checkpoint.objects.filter(session=obj).order_by("-id"), "state")[:LATEST_ROUNDS]
        return render_to_string(
            "admin/sessions_app/session/json_rows.html",
            {
                "rows": [(c.label, c.created_at, shown(c.state_start, c.state_length, json_text)) for c in checkpoints],
                "all_url": history_url(Checkpoint, obj),
                "empty": "No checkpoints.",
            },
        )

    @admin.display(description="")
    def transitions(self, obj: Session):
        return render_to_string(
            "admin/sessions_app/session/transitions.html",
            {
                "transitions": selectors.transition_list(session=obj)[:50],
                "all_url": history_url(AgentTransition, obj),
            },
        )

    @admin.display(description="")
    def working_state(self, obj: Session):
        return pretty_json(selectors.working_state_get(session=obj))

    @admin.display(description="")
    def adk_events(self, obj: Session):
        assert self.adk_section is not None  # get_fieldsets shows the field only when it is wired
        return self.adk_section(obj, history_url(AdkEvent, obj))


class SessionChildAdmin(SessionLabelTitle, ReadOnlyAdmin):
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

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        match = request.resolver_match
        if match is not None and match.url_name.endswith("_changelist"):
            queryset = previewed(queryset.defer(*self.list_deferred), *self.list_previewed)
        return queryset

    @admin.display(description="session", ordering="session_id")
    def session_link(self, obj):
        return session_label(obj.session)

    def search(self, queryset, term: str, search_fields):
        """Through the session, like the filters: the session table's indexes find it."""
        return queryset.filter(session__in=Session.objects.filter(Q(user_id=term) | Q(session_id=term)).values("pk"))


@admin.register(Message)
class MessageAdmin(SessionChildAdmin):
    list_display = ("seq", "session_link", "role", "name", "type", "content_preview", "created_at")
    list_display_links = ("seq",)
    list_filter = (*SessionChildAdmin.list_filter, RoleFilter, ("created_at", NarrowedDateFilter))
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
        return one_line(shown(obj.content_start, obj.content_length, content_text))  # type: ignore[attr-defined]

    def object_title(self, obj: Message) -> str:
        return f"Message {obj.seq}"

    content_json = json_display("content")

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


# --- LangGraph checkpointer ------------------------------------------------------------------

LANGGRAPH_TIMELINE = 50


def stored_value(value_type: str, value: bytes | memoryview, rendered: Any):
    """A stored LangGraph value: its JSON view, or the serializer's type and size without one."""
    if rendered is not None:
        return pretty_json(rendered)
    return format_html('<span class="quiet">{} value, {} bytes</span>', value_type, len(value))


@admin.register(LangGraphThread)
class LangGraphThreadAdmin(ReadOnlyAdmin):
    list_display = ("session_id", "thread_id", "user_id", "tenant", "created_at")
    list_select_related = ("tenant",)
    list_filter = ("tenant",)
    ordering = ("-session_id",)
    fields = ("tenant", "user_id", "thread_id", "session_link", "created_at", "timeline")
    readonly_fields = ("session_link", "timeline")

    @admin.display(description="session")
    def session_link(self, obj: LangGraphThread):
        url = reverse("admin:sessions_app_session_change", args=[obj.session_id])
        return format_html('<a href="{}">Session #{}</a>', url, obj.session_id)

    @admin.display(description="checkpoints, newest first")
    def timeline(self, obj: LangGraphThread):
        checkpoints = list(langgraph_selectors.thread_timeline(thread=obj)[:LANGGRAPH_TIMELINE])
        return render_to_string(
            "admin/sessions_app/langgraphthread/timeline.html",
            {
                "rows": [
                    (c, reverse("admin:sessions_app_langgraphcheckpoint_change", args=[c.pk]), json_text(c.metadata))
                    for c in checkpoints
                ],
                "all_url": reverse("admin:sessions_app_langgraphcheckpoint_changelist")
                + f"?session__id__exact={obj.pk}",
                "more": len(checkpoints) == LANGGRAPH_TIMELINE,
            },
        )


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

    def get_queryset(self, request):
        return super().get_queryset(request).defer("value", "rendered", "channel_versions", "metadata")

    metadata_json = json_display("metadata")

    channel_versions_json = json_display("channel_versions")

    @admin.display(description="state (channel values)")
    def state(self, obj: LangGraphCheckpoint):
        return stored_value(obj.value_type, obj.value, obj.rendered)

    @admin.display(description="pending writes")
    def pending_writes(self, obj: LangGraphCheckpoint):
        writes = langgraph_selectors.checkpoint_tuples([obj])[0].writes
        return render_to_string(
            "admin/sessions_app/langgraphthread/writes.html",
            {
                "writes": [(w, stored_value(w.value_type, w.value, w.rendered)) for w in writes],
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
    def value_display(self, obj: LangGraphWrite):
        return stored_value(obj.value_type, obj.value, obj.rendered)


# --- Google ADK -----------------------------------------------------------------------------


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
    def event_time(self, obj: AdkEvent):
        return timestamp_datetime(obj.timestamp)  # None (shown as "-") for one stored before the check

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


class RetentionPolicyForm(forms.ModelForm):
    """The rules are checked by the same service the API and the command trust."""

    class Meta:
        model = RetentionPolicy
        fields = ("tenant", *services.retention.POLICY_FIELDS)

    def clean(self):
        cleaned = super().clean()
        rules = {name: cleaned.get(name) for name in services.retention.POLICY_FIELDS if name not in self.errors}
        try:
            services.retention_policy_clean(**rules)
        except InvalidInput as exc:
            for name, errors in exc.fields.items():
                self.add_error(name, errors)
        return cleaned


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(admin.ModelAdmin):
    """One policy per tenant; an empty rule keeps everything. ``apply_retention`` enforces it."""

    form = RetentionPolicyForm
    list_display = ("tenant", *services.retention.POLICY_FIELDS, "updated_at")
    list_select_related = ("tenant",)
    ordering = ("tenant__slug",)

    def get_readonly_fields(self, request, obj=None):
        return ("tenant",) if obj is not None else ()  # the policy's key: a tenant keeps its own

    def save_model(self, request, obj, form, change):
        saved = services.retention_policy_save(
            tenant=obj.tenant, **{name: form.cleaned_data.get(name) for name in services.retention.POLICY_FIELDS}
        )
        obj.pk, obj.updated_at = saved.pk, saved.updated_at


@admin.register(RetentionRun)
class RetentionRunAdmin(ReadOnlyAdmin):
    """What each ``apply_retention`` run removed (or, dry, would have): a record, never edited."""

    list_display = ("started_at", "tenant_slug", "dry_run", "total", "duration_seconds")
    list_filter = ("dry_run",)
    ordering = ("-started_at",)
    fields = ("started_at", "tenant_slug", "dry_run", "duration_seconds", "counts")
