"""A subject export (``userdata_app.selectors.subject_export``) as an HTML document a person reads
and prints, like a letter at any depth of data: every object a list of labelled fields whose nested
values are indented below their label (never a column shrinking beside it), every list numbered,
every time a date ("26 Nov 2026, 06:29:01 UTC") with the exact ISO 8601 value kept in the
``<time>`` element. Short objects read as one line, empty fields are named once at the end, and
what nests deeper than ``INDENTED_DEPTH`` is shown as its JSON text; the JSON export has it all."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

NONE = mark_safe('<span class="empty">none</span>')
MISSING = mark_safe('<span class="empty">—</span>')
EMPTY = object()  # what an empty list's first member reads as
ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?)?$")
# Words a field name holds that people write otherwise ("adk_user_state": "ADK user state").
WORDS = {"adk": "ADK", "langgraph": "LangGraph", "openai": "OpenAI", "id": "id", "ns": "namespace", "seq": "number"}
# Nesting indented below its label up to this depth; deeper values read as their JSON text, so a
# framework's deeply nested blob never pushes the labels off the page.
INDENTED_DEPTH = 14
INLINE_CHARS = 100  # an object of plain values this long or shorter reads as one line
LABEL_BESIDE_CHARS = 24  # a longer label (a key a client chose) goes above its value, not beside it


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


def field_words(key: str) -> str:
    return " ".join(WORDS.get(word, word) for word in key.split("_"))


def field_label(key: str) -> str:
    words = field_words(key)
    return words[:1].upper() + words[1:]


def _compound(value: Any) -> bool:
    return isinstance(value, dict | list | tuple | Iterator)


def _blank(value: Any) -> bool:
    """Nothing held: no value, or a (read) object or list of nothing but blanks."""
    if value is None or value == "":
        return True
    if isinstance(value, dict):
        return all(_blank(member) for member in value.values())
    if isinstance(value, list | tuple):
        return all(_blank(member) for member in value)
    return False


def _peeked(value: Any) -> tuple[Any, bool]:
    """``value`` as it can still be read, and whether it holds anything (a lazy list is peeked)."""
    if isinstance(value, Iterator):
        first = next(value, EMPTY)
        return (itertools.chain([first], value), True) if first is not EMPTY else ([], False)
    return value, not _blank(value)


def _scalar(value: Any) -> SafeString:
    if value is None or value == "":
        return MISSING
    if isinstance(value, bool):
        return format_html("{}", "yes" if value else "no")
    if isinstance(value, str):
        return readable_time(value) or format_html('<span class="text">{}</span>', value)
    return format_html("{}", value)


def _one_line(value: Any) -> SafeString | None:
    """A short object of plain values as one line ("Units: metric · Last city: Paris"), or None."""
    if not isinstance(value, dict) or any(_compound(member) for member in value.values()):
        return None
    held = {key: member for key, member in value.items() if not _blank(member)}
    if sum(len(str(key)) + len(str(member)) + 3 for key, member in held.items()) > INLINE_CHARS:
        return None
    pairs = ((field_label(str(key)), _scalar(member)) for key, member in held.items())
    return format_html_join(" · ", '<span class="pair"><span class="key">{}:</span> {}</span>', pairs)


def document_html_pieces(value: Any, depth: int = 0) -> Iterator[str]:
    """``value`` (JSON-ready: dicts, lists, strings, numbers, None; lists may be iterators, as in
    a lazy subject export) as nested HTML, written piece by piece as it is read, so a worker holds
    a batch of the export's rows, never the whole document."""
    if isinstance(value, dict | list | tuple) and depth > INDENTED_DEPTH:
        yield format_html('<span class="text json">{}</span>', json.dumps(value, ensure_ascii=False))
    elif isinstance(value, dict):
        yield from _fields_pieces(value, depth)
    elif isinstance(value, list | tuple | Iterator):
        yield from _items_pieces(value, depth)
    else:
        yield _scalar(value)


def _fields_pieces(value: dict, depth: int) -> Iterator[str]:
    """An object: plain values beside their label, nested ones indented below it; fields without a
    value are left out, and the lists that hold nothing (the kinds of data none of which is held)
    are named in one sentence at the end."""
    line = _one_line(value)
    if line is not None:
        yield line or NONE
        return
    nothing = []
    yield '<dl class="fields">'
    for key, member in value.items():
        member, held = _peeked(member)
        if not held:
            if isinstance(member, list | tuple):
                nothing.append(field_words(str(key)))
            continue
        label = field_label(str(key))
        below = len(label) > LABEL_BESIDE_CHARS or (_compound(member) and _one_line(member) is None)
        css = mark_safe(' class="below"') if below else ""
        yield format_html("<dt{}>{}</dt><dd{}>", css, label, css)
        yield from document_html_pieces(member, depth + 1)
        yield "</dd>"
    if nothing:
        yield format_html('<dd class="nothing">Nothing held for {}.</dd>', ", ".join(nothing))
    yield "</dl>"


def _items_pieces(value: Any, depth: int) -> Iterator[str]:
    members = iter(value)
    first = next(members, EMPTY)
    if first is EMPTY:
        yield NONE
        return
    yield '<ol class="items">'
    for member in itertools.chain([first], members):
        yield "<li>"
        yield from document_html_pieces(member, depth + 1)
        yield "</li>"
    yield "</ol>"
