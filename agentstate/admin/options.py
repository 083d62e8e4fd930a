"""The ModelAdmin base of the records staff browse and never edit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib import admin
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest, HttpResponse

from agentstate import access
from agentstate.admin.display import identifier_is_valid
from agentstate.admin.pagination import CappedPaginator
from agentstate.db_router.router import replica_reads


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only for everyone, superusers included; counts capped for big tables; searches
    match the whole term exactly."""

    paginator = CappedPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # facet counts are a COUNT per filter choice
    list_per_page = 50

    @replica_reads  # a changelist tolerates lag (docs/SCALING.md): rendered here so its rows are read there
    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        response = response.render() if hasattr(response, "render") else response
        changelist = (getattr(response, "context_data", None) or {}).get("cl")
        if changelist is not None:  # the rows shown, told to the access log
            searched = bool(changelist.query or changelist.has_active_filters)
            pks = [row.pk for row in changelist.result_list]
            access.admin_rows_read(request=request, model=self.model, pks=pks, action="search" if searched else "list")
        return response

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,  # each admin narrows it to its model
    ) -> HttpResponse:
        """A record's page, told to the access log, or first the page the log asks for (a reason)."""
        if obj is not None:
            gate = access.admin_record_read(request=request, obj=obj)
            if gate is not None:
                return gate
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """Rows where one of ``search_fields`` (each an indexed ``<column>__exact``) equals the
        whole term as typed. Django's default splits the term on whitespace and unquotes the
        parts: an id holding a space or a no-break space could not be found, or found another."""
        search_fields = self.get_search_fields(request)
        if not (search_fields and search_term):
            return queryset, False
        if not identifier_is_valid(request, search_term, field="search"):
            return queryset.none(), False
        return self.search(queryset, search_term, search_fields), False

    def search(self, queryset: QuerySet[Any], term: str, search_fields: Sequence[str]) -> QuerySet[Any]:
        return queryset.filter(Q.create([(field, term) for field in search_fields], connector=Q.OR))

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
