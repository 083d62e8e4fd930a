"""Large documents written piece by piece: a worker holds a batch of rows, never the whole answer.

A subject export once built 157 MB of dicts, then its JSON, before sending a byte. Here a document
is lazy: dicts and lists whose values may be iterators, read in batches bounded by bytes
(``rows_in_batches``) and written as JSON text as they are read (``json_pieces``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
from django.conf import settings
from django.db import models
from django.db.models import Expression, QuerySet
from django.db.models.functions import Cast, Coalesce, Length
from django.http import StreamingHttpResponse

BATCH_ROWS = 500


def stored_size(model: type[models.Model], *fields: str) -> Expression:
    """About how many bytes ``fields`` hold in a row of ``model`` (text and JSON as their text,
    binary as it is), counted by the database so a batch or page is cut before its rows are read."""
    sizes = [Coalesce(_length(model, name), 0) for name in fields]
    total: Expression = sizes[0]
    for size in sizes[1:]:
        total = total + size
    return total


def _length(model: type[models.Model], name: str) -> Expression:
    if isinstance(model._meta.get_field(name), models.BinaryField):
        return Length(name)  # bytes (SQLite's LENGTH of a blob as text stops at its first NUL)
    return Length(Cast(name, models.TextField()))


def rows_in_batches(
    queryset: QuerySet,
    *,
    size: Expression,
    rank: Callable[[Any], Any] | None = None,
    max_bytes: int | None = None,
    prepare: Callable[[list[Any]], None] | None = None,
) -> Iterator[Any]:
    """``queryset``'s rows in its order (or, with ``rank``, sorted by ``rank(row's session_id)``,
    then its order), read a batch at a time: each batch holds at most ``BATCH_ROWS`` rows and
    about ``max_bytes`` (``settings.PAGE_MAX_BYTES``) of ``size``; a row larger than that comes alone.
    One query reads every row's key and size first. ``prepare`` gets each batch before its rows are
    handed out: what the rows name is read for the batch at once, not a query per row."""
    budget = settings.PAGE_MAX_BYTES if max_bytes is None else max_bytes
    sized = queryset.annotate(_size=size)
    if rank is None:
        keys = list(sized.values_list("pk", "_size"))
    else:
        by_session = sized.values_list("pk", "_size", "session_id")
        keys = [key[:2] for key in sorted(by_session, key=lambda key: rank(key[2]))]  # stable: order kept within
    batch: list[Any] = []
    held = 0
    for pk, row_size in keys:
        if batch and (held + row_size > budget or len(batch) == BATCH_ROWS):
            yield from _fetched(queryset, batch, prepare)
            batch, held = [], 0
        batch.append(pk)
        held += row_size
    if batch:
        yield from _fetched(queryset, batch, prepare)


def _fetched(queryset: QuerySet, pks: list[Any], prepare: Callable[[list[Any]], None] | None) -> list[Any]:
    found = queryset.in_bulk(pks)
    rows = [found[pk] for pk in pks if pk in found]  # one gone since the keys were read: skipped, as a later read would
    if prepare is not None and rows:
        prepare(rows)
    return rows


def json_pieces(value: Any) -> Iterator[str]:
    """``value`` as compact JSON text in pieces: dicts and lists are opened and written member by
    member, iterators (generators, ``map``) are consumed as lists, anything else is encoded whole."""
    if isinstance(value, dict):
        yield "{"
        for index, (key, member) in enumerate(value.items()):
            yield ("," if index else "") + json.dumps(str(key), ensure_ascii=False) + ":"
            yield from json_pieces(member)
        yield "}"
    elif isinstance(value, list | tuple | Iterator):
        yield "["
        for index, member in enumerate(value):
            if index:
                yield ","
            yield from json_pieces(member)
        yield "]"
    else:
        try:  # as the API's renderer writes it (NaN stored before it was refused becomes null)
            yield orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        except orjson.JSONEncodeError:  # integers past 64 bits, nesting past orjson's limit, a lone surrogate
            yield json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def materialized(value: Any) -> Any:
    """``value`` with every iterator read into a list: the whole document, for callers that hold it."""
    if isinstance(value, dict):
        return {key: materialized(member) for key, member in value.items()}
    if isinstance(value, list | tuple | Iterator):
        return [materialized(member) for member in value]
    return value


def json_response(document: Any, **headers: str) -> StreamingHttpResponse:
    """``document`` (lazy or not) sent as JSON while it is written."""
    return StreamingHttpResponse(joined(json_pieces(document)), content_type="application/json", headers=headers)


def joined(pieces: Iterable[str], *, at_least: int = 64 * 1024) -> Iterator[bytes]:
    """``pieces`` as UTF-8 chunks of at least ``at_least`` bytes (but the last): fewer, larger
    writes to the socket than one per JSON member."""
    buffered: list[str] = []
    held = 0
    for piece in pieces:
        buffered.append(piece)
        held += len(piece)
        if held >= at_least:
            yield "".join(buffered).encode()
            buffered, held = [], 0
    if buffered:
        yield "".join(buffered).encode()
