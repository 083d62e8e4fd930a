"""The session list and a session's page: who it belongs to, its latest history and state, and
links to everything else the admin holds about its user."""

from __future__ import annotations

from typing import Any, Protocol

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from agentstate import access, subject_data
from agentstate.admin.display import (
    content_text,
    datetime_display,
    identifier_display,
    identifier_html,
    json_display,
    json_text,
    pretty_json,
    previewed,
    related_display,
    shown,
)
from agentstate.admin.filters import InputFilter, UserIdFilter
from agentstate.admin.options import ReadOnlyAdmin
from agentstate.holds.admin import HeldPage
from agentstate.holds.selectors import holds_of
from agentstate.validation import identifier_visible
from sessions_app import backends, selectors
from sessions_app.backends import FrameworkSection
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session

LATEST_MESSAGES = 20
LATEST_ROUNDS = 10
LATEST_FORKS = 50
FORK_FIELDS = ("pk", "tenant_id", "session_id", "framework", "metadata")  # what names a fork
LATEST_USAGE = 20  # turns of usage a session page lists (the totals count them all)


class EndedFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "ended"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> tuple[tuple[str, str], ...]:
        return (("no", "Live"), ("yes", "Ended"))

    def queryset(self, request: HttpRequest, queryset: QuerySet[Session]) -> QuerySet[Session]:
        if self.value() in ("yes", "no"):
            return queryset.filter(ended_at__isnull=self.value() == "no")
        return queryset


class FrameworkFilter(admin.SimpleListFilter):
    """Sessions of one framework. No index: the list walks sessions newest first and stops at a
    page, which a framework in use fills quickly; with a user or tenant chosen their indexes
    narrow it first."""

    title = "framework"
    parameter_name = "framework"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return selectors.framework_choices()

    def queryset(self, request: HttpRequest, queryset: QuerySet[Session]) -> QuerySet[Session]:
        value = self.value()
        return selectors.sessions_of_framework(queryset, value) if value else queryset


class AgentFilter(InputFilter):
    title = "agent id"
    parameter_name = "agent_id"


class WorkspaceFilter(InputFilter):
    title = "workspace id"
    parameter_name = "workspace_id"


def user_changelists(site: admin.AdminSite) -> list[tuple[str, str]]:
    """Everything the admin lists about one user, as (label, URL name): the changelist of each
    model of the map of people's data whose rows carry the user id (``agentstate.subject_data``),
    the sessions first, that the login being served may open. Each filters by ``tenant__id__exact``
    and ``user_id``."""
    owned = sorted(
        (
            d
            for d in subject_data.declared()
            if not d.via and site.is_registered(d.model) and access.viewer_may_view(d.model)
        ),
        key=lambda d: d.model is not Session,
    )
    return [
        (
            subject_data.category_label(d.category),
            f"admin:{d.model._meta.app_label}_{d.model._meta.model_name}_changelist",
        )
        for d in owned
    ]


def history_url(model: type[Model], session: Session) -> str:
    return reverse(f"admin:sessions_app_{model._meta.model_name}_changelist") + f"?session__id__exact={session.pk}"


def user_url(url_name: str, *, tenant_pk: int, user_id: str) -> str:
    query: dict[str, int | str] = {"tenant__id__exact": tenant_pk, "user_id": user_id}
    return reverse(url_name) + "?" + urlencode(query)


def framework_section(session: Session) -> FrameworkSection | None:
    """The staff section the session's backend registered (``sessions_app.backends``), if any."""
    backend = backends.backend_get(selectors.session_framework(session))
    return backend.staff_section if backend else None


def session_name(session: Session) -> str:
    """How staff name a session in a list: its framework's name for it, else its session id."""
    section = framework_section(session)
    return section.name(session) if section and section.name else session.session_id


def session_label_text(session: Session) -> str:
    """``tenant / user / session`` as staff tell sessions apart (a page title). Not ``__str__``:
    the admin log keeps that, and a user id is personal data."""
    app = f" (app {identifier_visible(session.app_name)})" if session.app_name else ""
    return (
        f"{session.tenant.slug} / {identifier_visible(session.user_id)} / {identifier_visible(session.session_id)}{app}"
    )


def session_label(session: Session) -> SafeString:
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


class SessionChild(Protocol):
    """A row that belongs to a session: a message, a round, a framework's checkpoint..."""

    @property
    def session(self) -> Session: ...


class SessionLabelTitle(admin.ModelAdmin):
    """Change pages whose title names the session as ``tenant / user / session`` (linked, through
    templates/admin/sessions_app/change_form.html) instead of ``__str__``'s database number."""

    def object_title(self, obj: Any) -> str:  # each admin its own model
        return str(obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return (
            super()
            .get_queryset(request)
            .select_related(
                "tenant" if self.model is Session else "session__tenant"  # the label's, in the page's one query
            )
        )

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Session | SessionChild | None = None,
    ) -> HttpResponse:
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
class SessionAdmin(HeldPage, SessionLabelTitle, ReadOnlyAdmin):
    list_display = (
        "session_shown",
        "user_id_shown",
        "tenant",
        "framework_shown",
        "agent_id",
        "workspace_id",
        "contents",
        "created",
        "updated",
        "ended",
    )
    list_select_related = ("tenant",)
    list_filter = (
        "tenant",
        FrameworkFilter,
        EndedFilter,
        UserIdFilter,
        AgentFilter,
        WorkspaceFilter,
        "created_at",
        "updated_at",
    )
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
                    "tenant_shown",
                    "framework_shown",
                    "user_id_linked",
                    "session_id",
                    "agent_id",
                    "workspace_id",
                    "contents",
                    "derived_shown",
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
        ("Model usage", {"fields": ("run_usage",)}),
        ("Working state", {"fields": ("working_state",)}),
    )
    readonly_fields = (
        "tenant_shown",
        "user_id_linked",
        "framework_shown",
        "contents",
        "derived_shown",
        "last_seq",
        "history_generation",
        "forked_from",
        "forks",
        "metadata_json",
        "latest_messages",
        "latest_rounds",
        "checkpoints",
        "transitions",
        "run_usage",
        "working_state",
        "app_name",
        "framework_section",
        "imported_shown",
    )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return SessionChangeList

    def get_fieldsets(self, request: HttpRequest, obj: Session | None = None) -> Any:
        """A framework's session shows its own section (ADK: its events and state as ADK has them;
        LangGraph: its checkpoints; the OpenAI Agents SDK: its items, in place of the messages)."""
        section = framework_section(obj) if obj is not None else None
        if section is None:
            return self.fieldsets
        if section.in_place_of == "messages":
            return tuple(
                (section.title, {"fields": ("framework_section",)}) if name == "Latest messages" else (name, options)
                for name, options in self.fieldsets
            )
        return (
            (
                None,
                {
                    "fields": (
                        "tenant_shown",
                        "app_name",
                        "framework_shown",
                        "user_id_linked",
                        "session_id",
                        "contents",
                        "derived_shown",
                        "created_at",
                        *(["imported_shown"] if obj is not None and selectors.session_imported(obj) else []),
                        "updated_at",
                        "version",
                    )
                },
            ),
            (section.title, {"fields": ("framework_section",)}),
        )

    tenant_shown = related_display("tenant", description="tenant")
    user_id_shown = identifier_display("user_id", description="user id")
    created = datetime_display("created_at", description="created")
    updated = datetime_display("updated_at", description="updated")
    ended = datetime_display("ended_at", description="ended")

    def holds_of_object(self, obj: Session) -> QuerySet:
        return holds_of(tenant=obj.tenant, user_id=obj.user_id, session_pk=obj.pk)

    def object_title(self, obj: Session) -> str:
        """The session itself: its label is the title, after its framework's name for it if any."""
        name = session_name(obj)
        return "" if name == obj.session_id else name

    @admin.display(description="session", ordering="session_id")
    def session_shown(self, obj: Session) -> str:
        return session_name(obj)

    @admin.display(description="framework")
    def framework_shown(self, obj: Session) -> str:
        backend = selectors.session_backend(obj)
        return backend.label if backend else selectors.CORE_LABEL

    @admin.display(description="user id")
    def user_id_linked(self, obj: Session) -> SafeString:
        """The user id, spelled out, with links to everything else the admin holds about that user."""
        links = format_html_join(
            " · ",
            '<a href="{}">{}</a>',
            (
                (user_url(url_name, tenant_pk=obj.tenant_id, user_id=obj.user_id), label)
                for label, url_name in user_changelists(self.admin_site)
            ),
        )
        return format_html("{} — {}", identifier_html(obj.user_id), links)

    @admin.display(description="made from it")
    def derived_shown(self, obj: Session) -> SafeString | str:
        """What the map declares made from the session (memories, ``derived_from``), counted, each
        kind the login being served may open linked to its list narrowed to this session."""
        parts = [
            (
                reverse(f"admin:{d.model._meta.app_label}_{d.model._meta.model_name}_changelist")
                + f"?derived_from_session={obj.pk}",
                subject_data.rows_derived_from(d.model, obj.pk).count(),
                d.label or d.category,
            )
            for d in subject_data.declared()
            if d.derived_from is not None and self.admin_site.is_registered(d.model) and access.viewer_may_view(d.model)
        ]
        if not parts:
            return "-"  # nothing this login may open
        kept = [
            (
                reverse(f"admin:{d.model._meta.app_label}_{d.model._meta.model_name}_changelist")
                + f"?kept_for_review=1&tenant__id__exact={obj.tenant_id}",
                d.derived_from.kept(obj.tenant_id).count(),
                d.label or d.category,
            )
            for d in subject_data.declared()
            if d.derived_from is not None
            and d.derived_from.kept is not None
            and self.admin_site.is_registered(d.model)
            and access.viewer_may_view(d.model)
        ]
        review = format_html_join(
            "", ' · <a href="{}">{} {} of the tenant kept for review</a>', [k for k in kept if k[1]]
        )
        if not any(count for _, count, _ in parts):
            return format_html("nothing{}", review)
        return format_html("{}{}", format_html_join(" · ", '<a href="{}">{} {}</a>', parts), review)

    @admin.display(description="contains")
    def contents(self, obj: Session) -> str:
        """Messages, ADK events, LangGraph checkpoints or SDK items: counted for the whole page at
        once on the list (``SessionChangeList``). "Contains", not "holds": staff read "holds" as
        legal holds, which the same page lists."""
        counted = getattr(obj, "counted_contents", None) or selectors.session_contents([obj])[obj.pk]
        return str(counted)

    @admin.display(description="imported at")
    def imported_shown(self, obj: Session) -> str:
        """When and from which store ``import_sessions`` brought the session in, and whether "Created
        at" above is the framework's own creation time (read from its store) or, unknown, the import's."""
        imported = selectors.session_imported(obj) or {}
        when = parse_datetime(str(imported.get("at", "")))
        created = (
            "Created at is the framework's own creation time, read from its store."
            if imported.get("created_in_store")
            else "Its store gave no creation time: Created at is the import's."
        )
        shown = timezone.localtime(when).strftime("%Y-%m-%d %H:%M:%S") if when else "—"
        return f"{shown}, by import_sessions from {imported.get('from', 'another store')}. {created}"

    @admin.display(description="forked from")
    def forked_from(self, obj: Session) -> str:
        if obj.forked_from_seq is None:
            return "Not a fork."
        point = f"up to message {obj.forked_from_seq}, round {obj.forked_from_round}"
        if obj.parent_id is None:
            return f"{obj.forked_from_session_id} (deleted), {point}"
        parent = Session.objects.only(*FORK_FIELDS).get(pk=obj.parent_id)
        url = reverse("admin:sessions_app_session_change", args=[obj.parent_id])
        return format_html('<a href="{}">{}</a>, {}', url, session_name(parent), point)

    @admin.display(description="forks")
    def forks(self, obj: Session) -> str:
        forks = list(Session.objects.filter(parent=obj).order_by("id").only(*FORK_FIELDS)[:LATEST_FORKS])
        if not forks:
            return "No forks."
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            ((reverse("admin:sessions_app_session_change", args=[fork.pk]), session_name(fork)) for fork in forks),
        )

    metadata_json = json_display("metadata")

    @admin.display(description="")
    def latest_messages(self, obj: Session) -> str:
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
    def latest_rounds(self, obj: Session) -> str:
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
    def checkpoints(self, obj: Session) -> str:
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
    def transitions(self, obj: Session) -> str:
        return render_to_string(
            "admin/sessions_app/session/transitions.html",
            {
                "transitions": selectors.transition_list(session=obj)[:50],
                "all_url": history_url(AgentTransition, obj),
            },
        )

    @admin.display(description="")
    def run_usage(self, obj: Session) -> str:
        rows = list(selectors.run_usage_list(session=obj).order_by("-turn")[: LATEST_USAGE + 1])
        return render_to_string(
            "admin/sessions_app/session/run_usage.html",
            {
                "totals": selectors.run_usage_totals(selectors.run_usage_list(session=obj)),
                "rows": [
                    {
                        "details": json_text({"input": u.input_tokens_details, "output": u.output_tokens_details}),
                        **vars(u),
                    }
                    for u in reversed(rows[:LATEST_USAGE])
                ],
                "more": len(rows) > LATEST_USAGE,
            },
        )

    @admin.display(description="")
    def working_state(self, obj: Session) -> SafeString:
        return pretty_json(selectors.working_state_get(session=obj))

    @admin.display(description="")
    def framework_section(self, obj: Session) -> str:
        section = framework_section(obj)
        return section.render(obj) if section else ""  # in the fieldsets only when one is wired


class SessionChangeList(ChangeList):
    """The session list, each row's contents counted for the whole page at once."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        page = list(self.result_list)
        contents = selectors.session_contents(page)
        for session in page:
            session.counted_contents = contents[session.pk]
        self.result_list = page
