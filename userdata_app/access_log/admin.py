"""The log in the admin, for the Compliance group: the entries (read-only), who saw a person's
data (the hash computed from the id typed, posted, never in a URL), the export for an auditor,
and each tenant's policy."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.http import url_has_allowed_host_and_scheme

from agentstate.admin.options import ReadOnlyAdmin
from agentstate.identifiers import IdentifierFormField
from agentstate.tenancy.models import Tenant
from userdata_app.access_log import chain, recorder, selectors
from userdata_app.access_log.models import AccessEntry, AccessPolicy


class SubjectLookupForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("slug"), to_field_name="slug")
    user_id = IdentifierFormField(help_text="Exactly as the API stored it.")


class ExportForm(forms.Form):
    tenant = forms.ChoiceField(choices=())


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=500, min_length=5, widget=forms.Textarea(attrs={"rows": 3}))
    subject = forms.CharField(max_length=64, widget=forms.HiddenInput)
    next = forms.CharField(max_length=2000, widget=forms.HiddenInput)


@admin.register(AccessEntry)
class AccessEntryAdmin(ReadOnlyAdmin):
    list_display = ("seq", "tenant", "at", "actor", "action", "purpose", "model", "object_pks", "subject_hash")
    list_filter = ("action",)
    search_fields = ("subject_hash__exact", "tenant__exact")
    search_help_text = "Exact tenant slug or subject hash. To find a person by id, use 'Who saw a person's data'."
    ordering = ("tenant", "-seq")
    change_list_template = "admin/access_log/change_list.html"

    def get_urls(self) -> list[URLPattern]:
        return [
            path("who-saw/", self.admin_site.admin_view(self.who_saw_view), name="access_log_accessentry_who_saw"),
            path("export/", self.admin_site.admin_view(self.export_view), name="access_log_accessentry_export"),
            path("reason/", self.admin_site.admin_view(self.reason_view), name="access_log_accessentry_reason"),
            *super().get_urls(),
        ]

    def _page(self, request: HttpRequest, template: str, **context: Any) -> TemplateResponse:
        return TemplateResponse(
            request, template, {**self.admin_site.each_context(request), "opts": self.model._meta, **context}
        )

    def who_saw_view(self, request: HttpRequest) -> HttpResponse:
        """Who saw a person's data: the officer types the id; only its hash is looked up (and the
        look-up is itself logged)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = SubjectLookupForm(request.POST or None)
        entries = None
        if request.method == "POST" and form.is_valid():
            tenant, user_id = form.cleaned_data["tenant"], form.cleaned_data["user_id"]
            entries = list(selectors.subject_accesses(tenant_slug=tenant.slug, user_id=user_id)[:500])
            chain.subjects_entries_append(
                subjects={(tenant.slug, recorder.hash_of(tenant_slug=tenant.slug, user_id=user_id)): []},
                actor=request.user.get_username(),
                action=AccessEntry.Action.LOOKUP,
                model="",
            )
        return self._page(
            request, "admin/access_log/who_saw.html", title="Who saw a person's data", form=form, entries=entries
        )

    def export_view(self, request: HttpRequest) -> HttpResponseBase:
        """A tenant's log as JSON Lines, for an auditor."""
        if not request.user.has_perm("access_log.export_accessentry"):
            raise PermissionDenied
        form = ExportForm(request.POST or None)
        tenants = AccessEntry.objects.values_list("tenant", flat=True).distinct().order_by("tenant")
        form.fields["tenant"].choices = [(t, t) for t in tenants]  # type: ignore[attr-defined]
        if request.method == "POST" and form.is_valid():
            slug = form.cleaned_data["tenant"]
            response = StreamingHttpResponse(selectors.log_lines(tenant_slug=slug), content_type="application/jsonl")
            response["Content-Disposition"] = f'attachment; filename="access-log-{slug}.jsonl"'
            return response
        return self._page(request, "admin/access_log/export.html", title="Export the access log", form=form)

    def reason_view(self, request: HttpRequest) -> HttpResponse:
        """Keep the reason staff gave for a person's pages, then open the page they asked for."""
        form = ReasonForm(request.POST or None)
        if request.method != "POST" or not form.is_valid():
            return HttpResponse("Give a reason of at least 5 characters.", status=400)
        target = form.cleaned_data["next"]
        if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
            return HttpResponse("Bad page to return to.", status=400)
        recorder.reason_keep(request, digest=form.cleaned_data["subject"], reason=form.cleaned_data["reason"].strip())
        return HttpResponseRedirect(target)


@admin.register(AccessPolicy)
class AccessPolicyAdmin(admin.ModelAdmin):
    list_display = ("tenant", "reason_required")
    list_select_related = ("tenant",)
