"""List filters for big tables: an exact match typed in a box, a date range once the list is
narrowed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest

from agentstate.admin.display import identifier_is_valid
from agentstate.exceptions import InvalidInput
from agentstate.search.engine import TextIndex, query_clean, text_match
from agentstate.validation import IDENTIFIER_MAX_LENGTH


class InputFilter(admin.SimpleListFilter):
    """A text box for an exact match on an indexed column (no DISTINCT scan to list choices),
    the value taken exactly as typed."""

    template = "admin/input_filter.html"
    parameter_name: str  # each filter names its column
    max_length = IDENTIFIER_MAX_LENGTH  # the API's limit for this identifier
    placeholder = ""  # the box's hint ("" shows "exact <title>")

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> Iterable[tuple[str, str]]:
        return (("", ""),)  # one dummy choice so the admin shows the filter (choices shows a box instead)

    def choices(self, changelist: ChangeList) -> Iterator[Any]:  # for admin/input_filter.html, not the default
        yield {
            "query_parts": [
                (key, value)
                for key, value in changelist.get_filters_params().items()
                if key != self.parameter_name
                for value in (value if isinstance(value, list) else [value])
            ],
            "current": self.value() or "",
        }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        if not identifier_is_valid(request, value, field=self.parameter_name, max_length=self.max_length):
            return queryset.none()
        return self.filter(queryset, value)

    def filter(self, queryset: QuerySet[Any], value: str) -> QuerySet[Any]:
        return queryset.filter(**{self.parameter_name: value})


class UserIdFilter(InputFilter):
    title = "user id"
    parameter_name = "user_id"


class WordsFilter(InputFilter):
    """Rows by the words of their text, with the API's search (``agentstate.search``): ``index``
    finds them, so no scan of the text column."""

    index: ClassVar[TextIndex]
    title = "words"
    parameter_name = "words"
    placeholder = 'words, "a phrase", -not'

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        try:
            query = query_clean(value)
        except InvalidInput as exc:
            messages.warning(request, f"{exc.message} Nothing is searched.")
            return queryset.none()
        return queryset.filter(pk__in=text_match(self.index, query=query))


class NarrowedDateFilter(admin.DateFieldListFilter):
    """A date filter on a child table, applied once the list is narrowed to a user or a session.
    Child tables have no index on time (every append would pay for one); within one user's or
    one session's rows the (session, ...) indexes bound the scan, across the whole table nothing
    would. Without that narrowing the filter is left off, and the page says why."""

    narrowing = ("user_id", "session_id", "session__id__exact")

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        if self.used_parameters and not any(request.GET.get(name) for name in self.narrowing):
            messages.warning(
                request,
                f"The {self.title} filter applies once a user id or a session id is chosen: "
                "without one it would read the whole table.",
            )
            return queryset
        return super().queryset(request, queryset)
