"""What the erasure and the access request admins share: a request's columns, its lifecycle step
pages (one small form each), the tools its change page offers and why one staff might expect is
missing, and the subject export's permission, record and download."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import date
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from agentstate import streaming
from agentstate.exceptions import DomainError
from agentstate.subject_data import counted
from agentstate.tenancy.models import Tenant
from userdata_app.access_log.recorder import subjects_exported
from userdata_app.models import AccessRequest, ErasureRequest

Request = ErasureRequest | AccessRequest

# The Compliance group's permissions as staff read them (the requests' Meta.permissions).
PERMISSION_LABELS = {
    codename: f"“{name}”" for model in (ErasureRequest, AccessRequest) for codename, name in model._meta.permissions
}


class VerifyForm(forms.Form):
    """The verify step of an erasure and of an access request alike: how the identity was checked."""

    identity_check = forms.CharField(
        label="How the identity was verified",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="E.g. “reply from the account's registered e-mail address”. Recorded with your name and the time.",
    )


# A lifecycle step: (button label, its form or None, the service call taking (request, form data, actor)).
Step = tuple[str, type[forms.Form] | None, Callable[[Any, dict[str, Any], Any], Any]]


class OpenFilter(admin.SimpleListFilter):
    title = "deadline"
    parameter_name = "open"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> tuple[tuple[str, str], ...]:
        return (("yes", "Open"), ("overdue", "Overdue"))

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        """Open (not yet answered) and overdue requests, of erasure or of access alike."""
        if self.value() in ("yes", "overdue"):
            queryset = queryset.filter(status__in=queryset.model.OPEN_STATUSES)
        if self.value() == "overdue":
            queryset = queryset.filter(due_on__lt=timezone.localdate())
        return queryset


NOTHING_COUNTED = mark_safe('<tr><td colspan="2">nothing</td></tr>')


def count_rows(counts: dict[str, int]) -> SafeString:
    """Table rows "category | rows" for a preview or a receipt: one per category that holds rows
    (``subject_data.counted``), or one saying nothing does."""
    rows = counted(counts)
    return format_html_join("", "<tr><td>{}</td><td>{}</td></tr>", rows) if rows else NOTHING_COUNTED


NOTHING_FOUND = mark_safe(
    '<p class="errornote nothing-found">Nothing found for these subjects: no data is held under these '
    "(tenant, user id) pairs. Check each user id exactly as the API stored it (spaces and case count) "
    "and the tenant before going on.</p>"
)


def nothing_found_warning(counts: dict[str, int]) -> SafeString:
    """A warning above a preview of all zeros: a user id with a stray space or the wrong tenant
    finds nothing, and the request would be verified, executed or answered for no one."""
    return SafeString() if any(counts.values()) else NOTHING_FOUND


def counts_table(counts: dict[str, int]) -> SafeString:
    """What is held about a request's subjects, category by category, warned about when nothing is."""
    return nothing_found_warning(counts) + format_html(
        '<table class="erasure-counts"><tbody>{}</tbody></table>', count_rows(counts)
    )


def due_display(obj: Request) -> str:
    """The due date, "(extended)" after an extension, and an overdue badge once it has passed."""
    extended = " (extended)" if getattr(obj, "is_extended", False) else ""
    if obj.is_overdue:
        return format_html(
            '<span class="overdue-date">{}{}</span> <span class="status-badge status-overdue">overdue</span>',
            obj.due_on,
            extended,
        )
    return f"{obj.due_on}{extended}"


def status_badge(obj: Request) -> SafeString:
    return format_html('<span class="status-badge status-{}">{}</span>', obj.status, obj.get_status_display())


class RequestAdmin(admin.ModelAdmin):
    """A request of a person about their data (erasure or access): listed by deadline, moved along
    its lifecycle by the Compliance group's step pages, never deleted (the record that the person
    was answered). A subclass names its steps, the permission that decides them and its tools."""

    steps: dict[str, Step]
    step_route = "step"  # the step page's URL segment and name: <pk>/<step_route>/<step>/
    review_permission: str  # the codename of the permission that takes the steps
    request_fields: tuple[str, ...]  # what staff type in when recording a request
    display_fields: tuple[str, ...]  # the read-only displays of its change page

    list_display_links = ("request_label",)
    ordering = ("-id",)
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(subject_total=Count("subjects"))

    # --- Columns ----------------------------------------------------------------------------

    @admin.display(description="request", ordering="id")
    def request_label(self, obj: Request) -> str:
        return str(obj)

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Request) -> SafeString:
        return status_badge(obj)

    @admin.display(description="received", ordering="received_at")
    def received_on(self, obj: Request) -> date:
        return timezone.localdate(obj.received_at)

    @admin.display(description="subjects", ordering="subject_total")
    def subject_count(self, obj: Request) -> int:
        return obj.subject_total  # type: ignore[union-attr]  # annotated by get_queryset

    @admin.display(description="due", ordering="due_on")
    def due(self, obj: Request) -> str:
        return due_display(obj)

    # --- Editing and permissions ------------------------------------------------------------

    def get_readonly_fields(self, request: HttpRequest, obj: Request | None = None) -> tuple[str, ...]:
        if obj is None:
            return self.display_fields
        if obj.status != "received":
            return (*self.display_fields, *self.request_fields)
        return (*self.display_fields, "received_at")  # the due date was computed from it

    def has_change_permission(self, request: HttpRequest, obj: Request | None = None) -> bool:
        if obj is not None and obj.status not in obj.OPEN_STATUSES:
            return False  # answered: view only
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Request | None = None) -> bool:
        return False  # requests (and an erasure's receipt) are the audit trail

    def has_review_permission(self, request: HttpRequest) -> bool:
        """The lifecycle steps: the Compliance group's decisions on a request."""
        return request.user.has_perm(f"userdata_app.{self.review_permission}")

    def has_export_subject_data_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("userdata_app.export_subject_data")

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
        else:
            self.request_received(request, obj)

    def request_received(self, request: HttpRequest, obj: Any) -> None:
        """Record a new request through its service (which sets the due date)."""
        raise NotImplementedError

    # --- The change page's tools ------------------------------------------------------------

    def step_allowed(self, obj: Any, step: str) -> bool:
        raise NotImplementedError

    def tools(self, obj: Any) -> Iterable[tuple[str, str, str, bool]]:
        """The change page's buttons besides the steps: (context flag, what it does as staff read
        it, the permission's codename, whether the request's status offers it)."""
        return ()

    def url_name(self, view: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{view}"

    def object_views(self) -> list[tuple[str, str, Callable[..., HttpResponse | StreamingHttpResponse]]]:
        """A request's pages besides the change form: (route after its id, URL name's suffix, view)."""
        return [(f"{self.step_route}/<slug:step>/", self.step_route, self.step_view)]

    def get_urls(self) -> list[URLPattern]:
        return [
            *(
                path(f"<path:object_id>/{route}", self.admin_site.admin_view(view), name=self.url_name(name))
                for route, name, view in self.object_views()
            ),
            *super().get_urls(),
        ]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)
        extra_context = extra_context or {}
        if obj is not None:
            extra_context.update(self.tools_context(request, obj))
        return super().change_view(request, object_id, form_url, extra_context)

    def tools_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        """The steps and tools offered to this account, and, for each one the status allows but
        the account lacks the permission for, what it does and that permission."""
        steps = [(step, label) for step, (label, _, _) in self.steps.items() if self.step_allowed(obj, step)]
        may_review = self.has_review_permission(request) and self.has_change_permission(request, obj)
        context: dict[str, Any] = {"steps": steps if may_review else [], "step_url": self.step_route}
        missing = []
        if steps and not may_review:
            missing.append((", ".join(label.lower() for _, label in steps), PERMISSION_LABELS[self.review_permission]))
        tools = list(self.tools(obj))
        for flag, what, codename, available in tools:
            permitted = request.user.has_perm(f"userdata_app.{codename}")
            context[flag] = available and permitted
            if available and not permitted:
                missing.append((what, PERMISSION_LABELS[codename]))
        context["anything_offered"] = bool(context["steps"]) or any(context[flag] for flag, *_ in tools)
        context["missing_permissions"] = missing
        return context

    # --- Lifecycle steps (one small form each) ----------------------------------------------

    def request_or_404(self, request: HttpRequest, object_id: str) -> Any:
        """The request in a custom URL; a key that is not one (``abc``, a deleted id) is a 404."""
        obj = self.get_object(request, object_id)
        if obj is None:
            raise Http404(f"No such {self.opts.verbose_name}.")
        return obj

    def step_context(self, obj: Any, step: str) -> dict[str, str]:
        """What the step's page says above its form: an ``intro``, or a ``warning``."""
        return {}

    def step_view(self, request: HttpRequest, object_id: str, step: str) -> HttpResponse:
        obj = self.request_or_404(request, object_id)
        if not self.has_review_permission(request):
            raise PermissionDenied(f"{PERMISSION_LABELS[self.review_permission]} is the Compliance group's permission.")
        if step not in self.steps or not self.has_change_permission(request, obj):
            raise PermissionDenied
        label, form_class, apply = self.steps[step]
        form = form_class(request.POST or None) if form_class else None
        if request.method == "POST" and (form is None or form.is_valid()):
            try:
                apply(obj, form.cleaned_data if form else {}, request.user)
            except DomainError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.log_change(request, obj, f"{label} ({obj.get_status_display()})")
                self.message_user(
                    request, f"{obj}: {label.lower()} — now {obj.get_status_display().lower()}.", messages.SUCCESS
                )
                return HttpResponseRedirect(reverse(f"admin:{self.url_name('change')}", args=[obj.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"{label}: {obj}",
            "subtitle": None,
            "opts": self.opts,
            "object": obj,
            "form": form,
            "step_label": label,
            "step": step,
            **self.step_context(obj, step),
        }
        return TemplateResponse(request, "admin/userdata_app/request_step.html", context)

    # --- Subject export ---------------------------------------------------------------------

    def exported_request_or_403(self, request: HttpRequest, object_id: str) -> Any:
        """The request whose subjects' data the export page serves, to staff who may export."""
        if not self.has_export_subject_data_permission(request):
            raise PermissionDenied(f"{PERMISSION_LABELS['export_subject_data']} is the Compliance group's permission.")
        return self.request_or_404(request, object_id)

    def subjects_exported(
        self, request: HttpRequest, *, subjects: list[tuple[Tenant, str]], requests: Sequence[Model]
    ) -> None:
        """An export of these requests' subjects, recorded per person in the access log."""
        subjects_exported(
            actor=request.user.get_username(),
            subjects=subjects,
            model=self.opts.label,
            pks=[obj.pk for obj in requests],
        )

    def export_download(self, document: dict[str, Any], *, filename: str) -> StreamingHttpResponse:
        """A subject export as a JSON file, streamed: a large history never sits whole in the worker."""
        return streaming.json_response(document, **{"Content-Disposition": f'attachment; filename="{filename}"'})
