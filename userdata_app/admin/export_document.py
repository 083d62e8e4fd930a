"""A subject export (``userdata_app.selectors.subject_export``) as an HTML document a person reads
and prints: every object a table of its fields, every list numbered, every time a date ("26 Nov
2026, 06:29:01 UTC") with the exact ISO 8601 value kept in the ``<time>`` element."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

NONE = mark_safe('<span class="empty">none</span>')
MISSING = mark_safe('<span class="empty">—</span>')
EMPTY = object()  # what an empty list's first member reads as
ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?)?$")
# Words a field name holds that people write otherwise ("adk_user_state": "ADK user state").
WORDS = {"adk": "ADK", "langgraph": "LangGraph", "id": "id", "ns": "namespace", "seq": "number"}


def readable_time(value: str) -> SafeString | None:
    """An ISO 8601 date or time as people read it (times in UTC), or None when ``value`` is not one."""
    if not ISO_TIME.match(value):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if "T" not in value:
        return format_html('<time datetime="{}">{} {}</time>', value, moment.day, f"{moment:%b %Y}")
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    shown = f"{moment.day} {moment:%b %Y, %H:%M:%S}" + (" UTC" if moment.tzinfo else "")
    return format_html('<time datetime="{}">{}</time>', value, shown)


def field_label(key: str) -> str:
    words = [WORDS.get(word, word) for word in key.split("_")]
    return " ".join(words)[:1].upper() + " ".join(words)[1:]


def document_html_pieces(value: Any) -> Iterator[str]:
    """``value`` (JSON-ready: dicts, lists, strings, numbers, None; lists may be iterators, as in
    a lazy subject export) as nested HTML, written piece by piece as it is read, so a worker holds
    a batch of the export's rows, never the whole document."""
    if isinstance(value, dict):
        if not value:
            yield NONE
            return
        yield '<table class="fields"><tbody>'
        for key, member in value.items():
            yield format_html("<tr><th>{}</th><td>", field_label(str(key)))
            yield from document_html_pieces(member)
            yield "</td></tr>"
        yield "</tbody></table>"
    elif isinstance(value, list | tuple | Iterator):
        members = iter(value)
        first = next(members, EMPTY)
        if first is EMPTY:
            yield NONE
            return
        yield '<ol class="items">'
        for member in itertools.chain([first], members):
            yield "<li>"
            yield from document_html_pieces(member)
            yield "</li>"
        yield "</ol>"
    elif value is None or value == "":
        yield MISSING
    elif isinstance(value, bool):
        yield "yes" if value else "no"
    elif isinstance(value, str):
        yield readable_time(value) or format_html('<span class="text">{}</span>', value)
    else:
        yield format_html("{}", value)
