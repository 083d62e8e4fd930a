"""How the admin shows values to staff: JSON indented, long values previewed by the database,
identifiers with their invisible characters spelled out."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.db.models import Model, QuerySet, TextField
from django.db.models.functions import Cast, Length, Substr
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agentstate import access
from agentstate.exceptions import InvalidInput
from agentstate.validation import IDENTIFIER_MAX_LENGTH, clean_identifier, identifier_visible


def json_text(value: Any) -> str:
    """``value`` as indented JSON for staff; a lone surrogate stored before the input rules refused
    it is shown as its escape (the page could not be encoded with it)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, indent=2, ensure_ascii=True, sort_keys=True)
    return text


def pretty_json(value: Any) -> SafeString:
    return format_html('<pre class="json">{}</pre>', json_text(value))


def json_display(field: str) -> Callable[[Any, Model], SafeString]:
    """An admin column or read-only field showing model field ``field`` as indented JSON."""

    @admin.display(description=field.replace("_", " "))  # "channel versions", not "Channel_versions"
    def display(self: Any, obj: Model) -> SafeString:
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


def identifier_html(value: str, *, length: bool = True) -> SafeString:
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


def identifier_display(field: str, *, description: str, length: bool = False) -> Callable[[Any, Model], str]:
    """An admin column or read-only field showing model field ``field`` through ``identifier_html``."""

    @admin.display(description=description, ordering=field)
    def display(self: Any, obj: Model) -> str:
        value = getattr(obj, field)
        return identifier_html(value, length=length) if value else "—"

    return display


def related_display(field: str, *, description: str) -> Callable[[Any, Model], str]:
    """A read-only field showing the row foreign key ``field`` points to, linked to its page only
    for a login that may open it (Django's own read-only foreign key links whoever looks)."""

    @admin.display(description=description)
    def display(self: Any, obj: Model) -> str:
        related = getattr(obj, field)
        if related is None:
            return "—"
        meta = related._meta
        if not (self.admin_site.is_registered(type(related)) and access.viewer_may_view(type(related))):
            return str(related)
        url = reverse(f"{self.admin_site.name}:{meta.app_label}_{meta.model_name}_change", args=[related.pk])
        return format_html('<a href="{}">{}</a>', url, related)

    return display


def datetime_display(field: str, *, description: str) -> Callable[[Any, Model], str]:
    """A date-time list column that breaks between the date and the time, never inside either: a
    narrow column shows it on two lines rather than cut."""

    @admin.display(description=description, ordering=field)
    def display(self: Any, obj: Model) -> str:
        value = getattr(obj, field)
        if value is None:
            return "—"
        local = timezone.localtime(value)
        return format_html(
            '<span class="nowrap">{}</span> <span class="nowrap">{}</span>',
            local.strftime("%Y-%m-%d"),
            local.strftime("%H:%M:%S"),
        )

    return display


def identifier_is_valid(
    request: HttpRequest, value: str, *, field: str, max_length: int = IDENTIFIER_MAX_LENGTH
) -> bool:
    """Whether ``value`` could be a stored identifier (the API's own check); if not, tell the
    user why nothing matches. A NUL, for one, would reach PostgreSQL as a server error."""
    try:
        clean_identifier(value, field=field, max_length=max_length)
    except InvalidInput as exc:
        messages.warning(request, f"{exc.message} No identifier can match.")
        return False
    return True
