"""A changelist's paginator that costs the same at any table size."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.utils.functional import cached_property


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
