"""The JSON view staff and subject exports see of a stored LangGraph value, rendered when read.

The saver sends only the serializer's bytes: rendering a JSON view in the caller and storing it
beside the bytes cost more than the rest of a step's writes at a long thread (the state grows with
it, and every checkpoint carries it), while staff read a checkpoint rarely. LangGraph's serializer
writes JSON or msgpack; msgpack extension values (messages, pydantic models, dataclasses, UUIDs)
are ``(module, name, payload, ...)`` tuples, shown as their payload, which is what their fields
hold. Anything else (pickles, encrypted values, NumPy arrays) has no view: staff see its type and
size.
"""

from __future__ import annotations

import json
from typing import Any

import ormsgpack


def _ext(code: int, data: bytes) -> Any:
    """An extension value as its payload; a UUID as its usual text."""
    parts = ormsgpack.unpackb(data, ext_hook=_ext, option=ormsgpack.OPT_NON_STR_KEYS)
    if not isinstance(parts, (list, tuple)) or len(parts) < 3 or not all(isinstance(p, str) for p in parts[:2]):
        raise ValueError("not a constructor tuple")
    if tuple(parts[:2]) == ("uuid", "UUID") and isinstance(parts[2], str) and len(parts[2]) == 32:
        hex_ = parts[2]
        return f"{hex_[:8]}-{hex_[8:12]}-{hex_[12:16]}-{hex_[16:20]}-{hex_[20:]}"
    return parts[2]


def staff_view(value_type: str, data: bytes | memoryview) -> Any:
    """The value as JSON, or None where it has no JSON form (staff then see type and size)."""
    try:
        if value_type == "json":
            value = json.loads(bytes(data))
        elif value_type == "msgpack":
            value = ormsgpack.unpackb(bytes(data), ext_hook=_ext, option=ormsgpack.OPT_NON_STR_KEYS)
        else:
            return None
        # Round-trips through JSON so that what staff see is exactly what an export holds.
        return json.loads(json.dumps(value, allow_nan=False, default=_no_view))
    except (ValueError, TypeError):  # msgpack's decode errors are ValueErrors
        return None


def _no_view(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} has no JSON form")
