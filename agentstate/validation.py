"""Validation of identifiers and JSON documents, shared by every app.

Identifiers (user ids, session ids, user-data keys, checkpoint labels) are 1-128 characters with
no control characters and no ``/``. JSON documents may not hold NUL characters (PostgreSQL
rejects them), NaN, infinities or numbers past a float's range, nor nest deeper than
``MAX_JSON_DEPTH``; whole request bodies, and JSON carried as text, not deeper than
``MAX_BODY_DEPTH``. Datetimes given in queries must exist in UTC, timestamps (seconds) in the years
1 to 9999. Identifiers are never stripped or normalised: ``"alice"`` and ``"alice\u00a0"`` are two
people, and ``identifier_visible`` shows staff which one they are looking at.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

from django.utils.timezone import is_naive, make_aware

from agentstate.exceptions import InvalidInput

IDENTIFIER_MAX_LENGTH = 128
MAX_JSON_DEPTH = 32
# A body wraps its documents in a few levels of its own (a list of messages, a message, a content
# part): twice the document limit leaves room for them, so a document just over its limit is still
# refused naming its field, and stays far below the depth (about a thousand) where the JSON parser
# runs out of stack.
MAX_BODY_DEPTH = 2 * MAX_JSON_DEPTH
ROUND_ID_MAX = 2**31 - 1
# Unicode's control characters (category Cc, fixed by its stability policy): one search on every id
# of every call, where it asked each character's category.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def clean_identifier(value: Any, *, field: str, max_length: int = IDENTIFIER_MAX_LENGTH) -> str:
    """Return ``value`` if it is a valid identifier, else raise ``InvalidInput`` naming ``field``."""
    if not isinstance(value, str):
        raise InvalidInput.for_field(field, "must be a string.")
    if not value:
        raise InvalidInput.for_field(field, "must not be empty.")
    if len(value) > max_length:
        raise InvalidInput.for_field(field, f"must be at most {max_length} characters.")
    if "/" in value:
        raise InvalidInput.for_field(field, "must not contain '/'.")
    if _CONTROL.search(value):
        raise InvalidInput.for_field(field, "must not contain control characters.")
    if not _is_utf8(value):
        raise InvalidInput.for_field(field, LONE_SURROGATE)
    return value


ESCAPE_OPEN = "⟦"  # escaped itself when an id holds it, so that no id can imitate an escape
# Characters that draw nothing yet are neither format (Cf) nor space (Z*) characters: Unicode's
# default-ignorable letters and marks (Hangul fillers, variation selectors, ...) and the braille blank.
_INVISIBLE = frozenset(
    {
        0x034F,
        0x115F,
        0x1160,
        0x17B4,
        0x17B5,
        0x2800,
        0x3164,
        0xFFA0,
        *range(0x180B, 0x1810),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    }
)


def identifier_visible(value: str) -> str:
    """``value`` with every character a reader could miss spelled out as ``⟦U+XXXX⟧``: spaces
    other than a single inner ASCII space, other space, invisible, format and control characters,
    and ``⟦`` itself, so two different ids never look alike. For staff about to act on an id."""
    last = len(value) - 1
    shown = []
    for i, ch in enumerate(value):
        if ch == " ":
            hidden = i in (0, last) or value[i - 1] == " " or value[i + 1] == " "
        else:
            hidden = ch == ESCAPE_OPEN or unicodedata.category(ch)[0] in "CZ" or ord(ch) in _INVISIBLE
        shown.append(f"⟦U+{ord(ch):04X}⟧" if hidden else ch)
    return "".join(shown)


def _is_utf8(text: str) -> bool:
    """False for lone surrogates (JSON allows ``"\\ud800"``): no database can store them."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_optional_label(value: Any, *, field: str, max_length: int = IDENTIFIER_MAX_LENGTH) -> str:
    """Short names that may be blank (agent ids, workspace ids, roles): else an identifier."""
    if value is None or value == "":
        return ""
    return clean_identifier(value, field=field, max_length=max_length)


def clean_json(
    value: Any, *, field: str, require_object: bool = False, max_depth: int = MAX_JSON_DEPTH, binary: bool = False
) -> Any:
    """Check a JSON document: no NUL characters anywhere, bounded depth, optionally an object.
    ``binary``: bytes may stand where a value goes (a msgpack body's), checked as any value."""
    if require_object and not isinstance(value, dict):
        raise InvalidInput.for_field(field, "must be a JSON object.")
    if not _plainly_json(value, max_depth, binary):  # the walk below finds the fault and names it
        _check_json(value, field=field, depth=0, max_depth=max_depth, leaves=_BINARY_LEAVES if binary else _LEAVES)
    return value


_LEAVES = (bool, int)
_BINARY_LEAVES = (bool, int, bytes)


def _plainly_json(value: Any, left: int, binary: bool) -> bool:
    """True when ``_check_json`` would pass ``value`` and all it holds is of JSON's own types (no
    subclasses), nested at most ``left`` levels: the common case, checked with less work per value."""
    if left < 0:
        return False
    kind = type(value)
    if kind is str:
        return "\x00" not in value and (value.isascii() or _is_utf8(value))
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or "\x00" in key or not (key.isascii() or _is_utf8(key)):
                return False
            if not _plainly_json(item, left - 1, binary):
                return False
        return True
    if kind is list:
        return all(_plainly_json(item, left - 1, binary) for item in value)
    if kind is float:
        return math.isfinite(value)
    return value is None or kind is int or kind is bool or (binary and kind is bytes)


def _check_json(value: Any, *, field: str, depth: int, max_depth: int, leaves: tuple[type, ...] = _LEAVES) -> None:
    if depth > max_depth:
        raise InvalidInput.for_field(field, f"nests deeper than {max_depth} levels.")
    if isinstance(value, str):
        _check_text(value, field=field)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput.for_field(field, "object keys must be strings.")
            _check_text(key, field=field)
            _check_json(item, field=field, depth=depth + 1, max_depth=max_depth, leaves=leaves)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, field=field, depth=depth + 1, max_depth=max_depth, leaves=leaves)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidInput.for_field(field, "must not contain NaN or infinity.")
    elif value is not None and not isinstance(value, leaves):
        raise InvalidInput.for_field(field, "must be JSON.")


def parse_json_text(text: str, *, field: str) -> Any:
    """JSON carried as a string (ADK's state and events, LangGraph's filter), read by the rules of a
    JSON body: no NaN or infinity (Python's parser takes them, and 1e400 as infinity), no lone
    surrogate (no database stores one, no JSON encoder writes one), nesting at most
    ``MAX_BODY_DEPTH``. NUL characters are left to the caller: ADK's text keeps them."""
    if not _is_utf8(text):
        raise InvalidInput.for_field(field, LONE_SURROGATE)
    check_json_text_depth(text.encode("utf-8"), field=field)
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NotFinite:
        raise InvalidInput.for_field(field, "must not contain NaN or infinity.") from None
    except ValueError:
        raise InvalidInput.for_field(field, "must be valid JSON text.") from None
    if _SURROGATE_ESCAPE.search(text) and not _all_utf8(value):  # only an escape can make one now
        raise InvalidInput.for_field(field, LONE_SURROGATE)
    return value


LONE_SURROGATE = "must be valid Unicode (no lone surrogates)."
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _all_utf8(value: Any) -> bool:
    """Every string and key of a parsed JSON value is valid Unicode (depth is bounded already)."""
    if isinstance(value, str):
        return _is_utf8(value)
    if isinstance(value, dict):
        return all(_is_utf8(key) and _all_utf8(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_all_utf8(item) for item in value)
    return True


class _NotFinite(Exception):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def _check_text(value: str, *, field: str) -> None:
    if "\x00" in value:
        raise InvalidInput.for_field(field, "must not contain NUL characters.")
    if not _is_utf8(value):
        raise InvalidInput.for_field(field, LONE_SURROGATE)


def clean_round_id(value: Any, *, field: str = "round_id") -> int:
    """Round ids are non-negative 32-bit integers."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput.for_field(field, "must be an integer.")
    if not 0 <= value <= ROUND_ID_MAX:
        raise InvalidInput.for_field(field, f"must be between 0 and {ROUND_ID_MAX}.")
    return value


_JSON_MARKS = b'[]{}"'
_NOT_A_MARK = bytes(byte for byte in range(256) if byte not in _JSON_MARKS)
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")


def check_json_text_depth(raw: bytes, *, field: str, max_depth: int = MAX_BODY_DEPTH) -> None:
    """Refuse JSON text nesting deeper than ``max_depth`` before it is parsed: the parser recurses
    once per level and raises RecursionError (a 500) near a thousand levels, in a few KB of body.

    Only brackets outside strings count. The work is a handful of C-level passes over the bytes
    (no Python loop per character), so parsing a normal body costs little more than before.
    """
    if b'\\"' in raw:  # escaped quotes (and escaped backslashes) must not end a string early
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Adjacent quotes enclose no bracket (an empty string, or a gap between strings with none).
    marks = raw.translate(_AS_SQUARE, _NOT_A_MARK).replace(b'""', b"")
    brackets = b"".join(marks.split(b'"')[::2]) if b'"' in marks else marks
    # Each pass removes the innermost pairs: a balanced text is gone after as many passes as it is deep.
    for _ in range(max_depth):
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):
            break
        brackets = shorter
    # Openers never closed (a truncated body) nest inside each other just the same.
    if b"[]" in brackets or brackets.count(b"[") > max_depth:
        raise InvalidInput.for_field(field, f"nests deeper than {max_depth} levels.")


def timestamp_datetime(value: Any) -> datetime | None:
    """A timestamp (seconds since 1970) as a UTC datetime; None when no datetime can hold it (NaN,
    infinity, beyond the years 1 to 9999), as for a value stored before timestamps were checked."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(value, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


def clean_timestamp(value: Any, *, field: str) -> float:
    """A timestamp in seconds that a datetime can hold (the years 1 to 9999 in UTC): staff see it
    as one, and ADK's own database service converts it to one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput.for_field(field, "must be a number (seconds).")
    if timestamp_datetime(value) is None:
        raise InvalidInput.for_field(field, "must be a finite number of seconds within the years 1 to 9999.")
    return float(value)


def clean_datetime(value: datetime, *, field: str) -> datetime:
    """``value`` in UTC. A time that exists only with its offset (9999-12-31T23:59-01:00,
    0001-01-01T00:00+01:00) is refused: Python cannot convert it and SQLite would overflow; any
    valid one reaches the database in UTC, never with an offset PostgreSQL refuses (beyond ±16 h)."""
    if is_naive(value):
        value = make_aware(value)  # in the current time zone, as Django reads it
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidInput.for_field(field, "is outside the years 1 to 9999 once converted to UTC.") from None
