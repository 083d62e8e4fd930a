"""A subject export (``userdata_app.selectors.subject_export``) as an HTML document a person reads
and prints: every object a table of its fields, every list numbered, every time a date ("26 Nov
2026, 06:29:01 UTC") with the exact ISO 8601 value kept in the ``<time>`` element."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

NONE = mark_safe('<span class="empty">none</span>')
MISSING = mark_safe('<span class="empty">—</span>')
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


def document_html(value: Any) -> SafeString:
    """``value`` (JSON-ready: dicts, lists, strings, numbers, None) as nested HTML."""
    if isinstance(value, dict):
        if not value:
            return NONE
        return format_html(
            '<table class="fields"><tbody>{}</tbody></table>',
            format_html_join(
                "",
                "<tr><th>{}</th><td>{}</td></tr>",
                ((field_label(str(key)), document_html(member)) for key, member in value.items()),
            ),
        )
    if isinstance(value, list):
        if not value:
            return NONE
        return format_html(
            '<ol class="items">{}</ol>', format_html_join("", "<li>{}</li>", ((document_html(m),) for m in value))
        )
    if value is None or value == "":
        return MISSING
    if isinstance(value, bool):
        return format_html("{}", "yes" if value else "no")
    if isinstance(value, str):
        return readable_time(value) or format_html('<span class="text">{}</span>', value)
    return format_html("{}", value)
