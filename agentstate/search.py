"""Full-text search over people's data: one engine for every searchable table (message history
now; memories can declare a ``TextIndex`` of their own, docs/DESIGN.md "Search").

The database keeps each index in step with its table (a generated tsvector column with a GIN
index on PostgreSQL, an FTS5 table filled by triggers on SQLite: created by the table's
migration), so whatever writes or deletes the rows updates the index in the same transaction.
A query is the same small language on both (web search style: words, "quoted phrases", ``or``,
``-word``); PostgreSQL reads it with ``websearch_to_tsquery``, SQLite gets it rewritten with
every phrase quoted, so nothing a caller types reaches FTS5's own syntax. Words match whole (no
stemming: the ``simple`` configuration and FTS5's ``unicode61`` tokenizer), ranked by
``ts_rank`` / ``bm25``.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.expressions import RawSQL

from agentstate.exceptions import InvalidInput
from agentstate.validation import LONE_SURROGATE

MAX_QUERY_LENGTH = 256
MAX_LIMIT = 100
MAX_OFFSET = 10_000  # how deep paging goes: ranking reads every match up to there
MARK = "**"  # around each matched word in a snippet (plain text, never HTML)
_PHRASE_OR_WORD = re.compile(r'"([^"]*)"?|(\S+)')
_SEARCHABLE = re.compile(r"[^\W_]")  # a letter or digit: what both tokenizers keep
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_HEADLINE_OPTIONS = f'StartSel={MARK}, StopSel={MARK}, MaxWords=24, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "'


@dataclass(frozen=True)
class TextIndex:
    """A table whose rows' text is searchable, and where each database keeps its index. The SQL
    expressions read the row as ``t``; ``pg_vector`` is the GIN-indexed tsvector (a generated
    column: ranking reads it instead of recomputing it from the row)."""

    table: str
    pg_vector: str  # the row's tsvector
    pg_text: str  # the row's text, for the headline
    fts_table: str  # SQLite: the FTS5 table, rowid = the row's id


@dataclass(frozen=True)
class Hit:
    row: tuple  # the caller's columns
    rank: float  # higher is better; comparable only within one search
    snippet: str


def text_indexes_compact(indexes: list[TextIndex]) -> None:
    """SQLite: merge each FTS5 index into one segment, which drops deleted rows' words from its
    pages (``secure_delete`` zeroes the pages freed). PostgreSQL keeps no copy to compact: a GIN
    index's dead entries point at dead rows and go with them at VACUUM (docs/COMPLIANCE.md)."""
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        for index in indexes:
            table = index.fts_table
            cursor.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")  # noqa: S608 (constant SQL)


def query_clean(query: Any) -> str:
    """The query, or a 400 saying why it cannot be searched."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput.for_field("q", "Give the words to search for.")
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidInput.for_field("q", f"At most {MAX_QUERY_LENGTH} characters.")
    if _CONTROL.search(query):
        raise InvalidInput.for_field("q", "Control characters cannot be searched.")
    try:
        query.encode()
    except UnicodeEncodeError:
        raise InvalidInput.for_field("q", LONE_SURROGATE) from None
    if not any(positives for positives, _ in _alternatives(query)):
        raise InvalidInput.for_field("q", "Give at least one word (letters or digits) that results must contain.")
    return query


def _alternatives(query: str) -> list[tuple[list[str], list[str]]]:
    """The query's ``or``-separated alternatives, each as (phrases it must hold, phrases it must not)."""
    alternatives: list[tuple[list[str], list[str]]] = [([], [])]
    for quoted, word in _PHRASE_OR_WORD.findall(query):
        if word.lower() == "or" and not quoted:
            alternatives.append(([], []))
            continue
        negative = bool(word) and word.startswith("-")
        phrase = quoted or (word[1:] if negative else word)
        if _SEARCHABLE.search(phrase):
            alternatives[-1][1 if negative else 0].append(phrase)
    return [alternative for alternative in alternatives if alternative[0] or alternative[1]]


def fts5_query(query: str) -> str:
    """The query in FTS5's syntax, every phrase quoted: AND within an alternative, then OR, as
    ``websearch_to_tsquery`` reads it. An alternative with only words to exclude is dropped (FTS5
    cannot say "everything but")."""

    def quoted(phrase: str) -> str:
        return '"' + phrase.replace('"', '""') + '"'

    return " OR ".join(
        "(" + " ".join(map(quoted, positives)) + "".join(f" NOT {quoted(p)}" for p in negatives) + ")"
        for positives, negatives in _alternatives(query)
        if positives
    )


def text_search(
    index: TextIndex,
    *,
    connection: BaseDatabaseWrapper,
    query: str,
    scope: str,
    scope_params: list[Any],
    columns: str,
    joins: str = "",
    limit: int,
    offset: int = 0,
) -> list[Hit]:
    """The rows of ``index`` within ``scope`` (SQL over ``t``) matching ``query`` (already
    cleaned), best first, ties newest first; each with ``columns`` (SQL over ``t`` and ``joins``),
    its rank and a snippet of its text with the matched words between ``MARK``s."""
    if connection.vendor == "postgresql":
        sql = f"""
            SELECT {columns}, hit.rank, ts_headline('simple', {index.pg_text}, q, %s)
            FROM (
                SELECT t.id, ts_rank({index.pg_vector}, q) AS rank
                FROM {index.table} t, websearch_to_tsquery('simple', %s) q
                WHERE {scope} AND {index.pg_vector} @@ q
                ORDER BY rank DESC, t.id DESC LIMIT %s OFFSET %s
            ) hit
            JOIN {index.table} t ON t.id = hit.id {joins}, websearch_to_tsquery('simple', %s) q
            ORDER BY hit.rank DESC, t.id DESC"""  # noqa: S608 (constant SQL of the index and caller; values are parameters)
        params = [_HEADLINE_OPTIONS, query, *scope_params, limit, offset, query]
    else:
        f = index.fts_table  # FTS5's functions and MATCH take the table's name, not an alias
        sql = f"""
            SELECT {columns}, -bm25({f}), snippet({f}, 0, '{MARK}', '{MARK}', ' … ', 16)
            FROM {f} JOIN {index.table} t ON t.id = {f}.rowid {joins}
            WHERE {f} MATCH %s AND {scope}
            ORDER BY bm25({f}), t.id DESC LIMIT %s OFFSET %s"""  # noqa: S608 (as above)
        params = [fts5_query(query), *scope_params, limit, offset]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [Hit(row=tuple(row[:-2]), rank=float(row[-2]), snippet=row[-1] or "") for row in cursor.fetchall()]


def text_match(index: TextIndex, *, query: str) -> RawSQL:
    """The ids of every row of ``index`` matching ``query`` (already cleaned), as a subquery for
    ``pk__in``: a filter on any queryset of the table (the admin's)."""
    if connection.vendor == "postgresql":
        sql = f"SELECT t.id FROM {index.table} t WHERE {index.pg_vector} @@ websearch_to_tsquery('simple', %s)"  # noqa: S608 (constant SQL)
        return RawSQL(sql, [query])  # noqa: S611 (constant SQL; the query is a parameter)
    table = index.fts_table
    return RawSQL(f"SELECT rowid FROM {table} WHERE {table} MATCH %s", [fts5_query(query)])  # noqa: S608, S611 (constant SQL)


def search_cursor(offset: int) -> str:
    """The opaque cursor of the page that starts at ``offset``."""
    return base64.urlsafe_b64encode(f"o{offset}".encode()).decode().rstrip("=")


def search_cursor_offset(cursor: str) -> int:
    """The offset a cursor of ``search_cursor`` holds, or a 400 (field ``cursor``)."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if not re.fullmatch(r"o[0-9]{1,6}", text):
            raise ValueError(text)
        offset = int(text[1:])
    except ValueError:
        raise InvalidInput.for_field("cursor", "Invalid cursor.") from None
    if offset > MAX_OFFSET:
        raise InvalidInput.for_field("cursor", f"Results go {MAX_OFFSET} deep at most: refine the query.")
    return offset
