"""Cursor pagination for every list: a stable, unique ordering served by an index, no COUNT, and
the same cost on page 1 and page 1,000. ``page_size`` (default 100) is capped at 500; the lists
whose rows the database writes as JSON take up to 2,000, in pages bounded by bytes
(``RowsPagination``), as are the lists whose rows can be large (``ModelsPagination``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from django.db.models import Expression, QuerySet
from rest_framework import pagination, serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.utils.urls import replace_query_param

from agentstate import search, streaming
from agentstate.api import json_rows
from agentstate.exceptions import InvalidInput
from agentstate.validation import clean_datetime

if TYPE_CHECKING:  # DRF imports this module while rest_framework.views loads
    from rest_framework.views import APIView

MAX_PAGE_SIZE = 500
MAX_ROWS_PAGE_SIZE = 2000
_BIGINT_MAX = 2**63 - 1


class CursorPagination(pagination.CursorPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int:
        """``page_size`` outside 1..500 is a 400 naming it, not a silently different page."""
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if not 1 <= size <= self.max_page_size:
            raise ValidationError({self.page_size_query_param: [f"must be an integer from 1 to {self.max_page_size}."]})
        return size

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        """The schema states the bounds ``get_page_size`` enforces."""
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                    "default": self.page_size,
                }
                parameter["description"] = self.page_size_description
        return parameters

    page_size_description = "Rows per page."

    # The ignore: these paginators page querysets only (they read the model), not any sequence.
    def paginate_queryset(  # type: ignore[override]
        self, queryset: QuerySet[Any], request: Request, view: APIView | None = None
    ) -> list[Any] | None:
        self._model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def _get_position_from_instance(self, instance: Any, ordering: Any) -> str:
        """Rows of ``agentstate.api.json_rows`` are tuples that start with the position."""
        if isinstance(instance, tuple):
            return str(instance[0])
        return super()._get_position_from_instance(instance, ordering)

    def decode_cursor(self, request: Request) -> pagination.Cursor | None:
        """Refuse (400, field ``cursor``) a cursor whose position is not a value of the ordering
        field: a forged one must not reach the database as a bad parameter. A cursor that decodes to
        nothing (``AAAA``, ``!!!``) is refused too, as the ADK pages refuse one: every cursor this
        server gives names a position, an offset or a direction."""
        try:
            cursor = super().decode_cursor(request)
            if cursor == pagination.Cursor(offset=0, reverse=False, position=None):
                if request.query_params.get(self.cursor_query_param) == "":
                    return None  # ``?cursor=``: the first page, as without one
                raise ValueError("empty cursor")
            if cursor is not None and cursor.position is not None:
                # djangorestframework-stubs type Cursor.position as int; DRF decodes it from the query string: a str.
                cursor = cursor._replace(position=self._checked_position(cursor.position))  # type: ignore[arg-type]
        except (NotFound, DjangoValidationError, InvalidInput, ValueError, TypeError):
            raise ValidationError({self.cursor_query_param: ["Invalid cursor."]}) from None
        return cursor

    def _checked_position(self, position: str) -> str:
        """The position as the database should see it: integers within 64 bits, datetimes in UTC."""
        ordering = self.ordering if isinstance(self.ordering, str) else self.ordering[0]
        field = self._model._meta.get_field(ordering.lstrip("-"))
        if "\x00" in position:
            raise ValueError("NUL in cursor")
        value = field.to_python(position)
        if isinstance(field, models.IntegerField) and not -_BIGINT_MAX <= value <= _BIGINT_MAX:
            raise ValueError("cursor out of range")
        if isinstance(field, models.DateTimeField):
            return clean_datetime(value, field=self.cursor_query_param).isoformat()
        return position


class ByteBoundedPagination(CursorPagination):
    """Pages that end early once they hold ``settings.PAGE_MAX_BYTES`` (one row always fits,
    whatever its size), so no page makes a worker hold much more than that; ``next`` starts at
    the first row left out. ``bounded`` says how the database counts a page's bytes."""

    page_size_description = (
        "Rows per page. A page ends early once its rows hold the server's AGENTSTATE_PAGE_MAX_BYTES "
        "(4 MiB by default): follow `next` until it is null."
    )
    _requested_page_size = CursorPagination.page_size
    _budget: json_rows.ByteBudget | None = None
    _rows_in_page: int | None = None

    def bounded(self, queryset: QuerySet[Any], budget: json_rows.ByteBudget) -> QuerySet[Any]:
        raise NotImplementedError

    def paginate_queryset(  # type: ignore[override]  # as CursorPagination's: querysets only
        self, queryset: QuerySet[Any], request: Request, view: APIView | None = None
    ) -> list[Any] | None:
        self._budget = json_rows.ByteBudget(settings.PAGE_MAX_BYTES)
        page = super().paginate_queryset(self.bounded(queryset, self._budget), request, view)
        if page is not None:
            self._rows_in_page = len(page)
        return page

    @property
    def page_size(self) -> int:
        """What was asked for until a fetch runs out of bytes, then the rows that fit: DRF's cursor
        logic then takes those as the page and the row after them as the next page's start. Once
        the page is read, the rows it holds: DRF's links step over a run of equal positions by the
        page size, which is right only for a full page (from a short last page, ``previous`` of
        sessions created in the same instant skipped some)."""
        if self._rows_in_page is not None:
            return self._rows_in_page
        if self._budget is not None and self._budget.rows_that_fit is not None:
            return self._budget.rows_that_fit
        return self._requested_page_size

    @page_size.setter
    def page_size(self, value: int) -> None:
        self._requested_page_size = value

    def _ordering_as_tuple(self) -> None:
        """As DRF's ``paginate_queryset`` leaves it, which its links read."""
        self.ordering = (self.ordering,) if isinstance(self.ordering, str) else tuple(self.ordering)

    def forward_position(self, request: Request, model: type[models.Model]) -> str | None:
        """The position of the request's cursor when it is a plain forward one (a ``next`` link with
        no offset: the rows before that position, in this pagination's order), which a written-out
        statement reads as ``paginate_first_page(position=...)``; None otherwise (no cursor, an
        empty one, or one only ``paginate_queryset`` reads). A malformed cursor is refused here."""
        if not request.query_params.get(self.cursor_query_param):
            return None
        self._model = model
        self._ordering_as_tuple()
        cursor = self.decode_cursor(request)
        if cursor is None or cursor.reverse or cursor.offset or cursor.position is None:
            return None
        return str(cursor.position)

    def paginate_first_page(
        self,
        fetch: Callable[[int, json_rows.ByteBudget], list[Any]],
        request: Request,
        *,
        position: str | None = None,
    ) -> list[Any]:
        """``paginate_queryset`` of a first page (a request that names no cursor), or of the page a
        plain forward cursor at ``position`` names (``forward_position``), read by ``fetch(rows,
        budget)``: a written-out statement giving the first ``rows`` rows in this pagination's
        order (after ``position``), bounded as ``bounded`` bounds them (``json_rows.bounded_fetch``
        for rows). The state is the one DRF's cursor logic leaves after such a page, so the links
        are its links; building the queryset it pages cost more than reading the page."""
        self.request = request
        self.page_size = self.get_page_size(request)
        self.base_url = request.build_absolute_uri()
        self._ordering_as_tuple()
        # djangorestframework-stubs type Cursor.position as int; DRF decodes it as a str.
        self.cursor = None if position is None else pagination.Cursor(0, False, position)  # type: ignore[arg-type]
        self._budget = json_rows.ByteBudget(settings.PAGE_MAX_BYTES)
        results = fetch(self.page_size + 1, self._budget)
        self.page = results[: self.page_size]  # the rows that fit, when the budget ran out
        self._rows_in_page = len(self.page)
        self.has_previous = position is not None  # as DRF's forward cursor: the page before starts here
        if self.has_previous:
            self.previous_position = position
        self.has_next = len(results) > len(self.page)
        if self.has_next:
            self.next_position = self._get_position_from_instance(results[-1], self.ordering)
        self.display_page_controls = (self.has_previous or self.has_next) and self.template is not None
        return self.page


class RowsPagination(ByteBoundedPagination):
    """For the rows of ``agentstate.api.json_rows``: pages of up to 2,000, bounded by their JSON. A
    page of small rows pays a length per row for it (``json_rows.byte_bounded``, docs/PERFORMANCE.md)."""

    max_page_size = MAX_ROWS_PAGE_SIZE

    def bounded(self, queryset: QuerySet[Any], budget: json_rows.ByteBudget) -> QuerySet[Any]:
        return json_rows.byte_bounded(queryset, budget)


class ModelsPagination(ByteBoundedPagination):
    """For model rows whose ``large`` fields can hold megabytes each: the page is read without them,
    with their ``size`` counted by the database, and they are read for the rows that fit."""

    large: tuple[str, ...] = ()

    def size(self) -> Expression:
        return streaming.stored_size(self._model, *self.large)

    def bounded(self, queryset: QuerySet[Any], budget: json_rows.ByteBudget) -> QuerySet[Any]:
        self._model = queryset.model
        return json_rows.byte_bounded_models(queryset, budget, size=self.size(), large=self.large)


class SessionPagination(RowsPagination):
    ordering = ("created_at", "id")


class SeqPagination(RowsPagination):
    ordering = "seq"


class RoundPagination(CursorPagination):
    ordering = "round_id"


class RunUsagePagination(CursorPagination):
    ordering = "turn"


class InsertionPagination(CursorPagination):
    """Checkpoints, in the order they were stored."""

    ordering = "id"


class TransitionPagination(ModelsPagination):
    """Agent hand-offs in the order they were recorded; their reason and metadata can be large."""

    ordering = "id"
    large = ("reason", "metadata")


class KeyPagination(ModelsPagination):
    ordering = "key"
    large = ("value",)


# --- Search results: ranked, so paged by offset (agentstate.search) ------------------------------


class SearchPageQuery(serializers.Serializer):
    """A search's page: ``limit`` results from the ``cursor`` of the page before (an offset)."""

    limit = serializers.IntegerField(required=False, min_value=1, max_value=search.MAX_LIMIT, default=20)
    cursor = serializers.CharField(required=False, help_text="The `next` page's cursor.")

    def validate_cursor(self, value: str) -> int:
        return search.search_cursor_offset(value)


def search_page(request: Request, query: dict[str, Any], find: Callable[[int, int], list[Any]]) -> dict[str, Any]:
    """The page of results ``find(limit, offset)`` gives for a ``SearchPageQuery``, with the
    ``next`` page's URL when there is one (asked for one result more than the page holds)."""
    offset, limit = query.get("cursor", 0), query["limit"]
    hits = find(limit + 1, offset)
    next_url = replace_query_param(request.build_absolute_uri(), "cursor", search.search_cursor(offset + limit))
    return {"next": next_url if len(hits) > limit else None, "results": hits[:limit]}
