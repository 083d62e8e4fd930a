"""Full-text search over people's data, the engine: one for every searchable table, message history and
memory items (docs/DESIGN.md "Search").

The database keeps each index in step with its table (a generated tsvector column with a GIN
index on PostgreSQL, an FTS5 table filled by triggers on SQLite: created by the table's
migration, ``json_text_index_operation``), so whatever writes or deletes the rows updates the
index in the same transaction. Words match whole, in any case, without stemming (the ``simple``
configuration and FTS5's ``unicode61`` tokenizer: "run" does not find "running").

Two ways to search. ``text_search`` (messages): a small web-search language (words that must all
appear, "quoted phrases", ``or``, ``-word``); PostgreSQL reads it with ``websearch_to_tsquery``,
SQLite gets it rewritten with every phrase quoted, so nothing a caller types reaches FTS5's own
syntax; the newest ``RANKED_MATCHES`` matches ranked by ``ts_rank`` / ``bm25``. ``text_search_any``
(memories, ``search_memories``): any of the query's words, as ADK's memory services match,
ranked by how many of them a row holds, then how rare they are, the same on both databases.
"""

from __future__ import annotations

import base64
import hashlib
import json
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
MAX_WORDS = 64  # an any-word search counts a query's first 64 distinct words (a long prompt's)
MAX_WORDS_QUERY_LENGTH = 10_000  # an any-word query may be a whole prompt
MAX_OFFSET = 10_000  # how deep paging goes: ranking reads every match up to there
RANKED_MATCHES = 1_000  # text_search ranks a query's newest 1,000 matches: its results end there
# text_search matches the owner in the index up to this many rows of theirs: past it, walking their
# rows newest first stops sooner than reading every match (docs/PERFORMANCE.md, "Search").
OWNER_MATCH_ROWS = 20_000
OWNER_PREFIX = "owner "  # of owner_lexeme: a word a query parses to never holds a space
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
    pg_owner: tuple[str, ...] = ()  # PostgreSQL: the columns naming whose the row is (owner_lexeme)


def owner_lexeme(*owner: Any) -> str:
    """The lexeme a row's stored vector holds beside its words when its ``TextIndex`` names
    ``pg_owner`` columns (``owner`` are their values; ``json_text_index_sql`` writes the same in
    SQL): a digest, so any identifier fits, behind a prefix holding a space, which no word a query
    parses to holds, so typing it matches nothing."""
    digest = hashlib.md5(" ".join(map(str, owner)).encode(), usedforsecurity=False).hexdigest()
    return f"{OWNER_PREFIX}{digest}"


def owner_lexeme_sql(owner: tuple[str, ...]) -> str:
    key = " || ' ' || ".join(f"{column}::text" for column in owner)
    return f"array_to_tsvector(ARRAY['{OWNER_PREFIX}' || md5({key})])"


@dataclass(frozen=True)
class Hit:
    row: tuple  # the caller's columns
    rank: float  # higher is better; comparable only within one search
    snippet: str


def text_indexes_compact(indexes: list[TextIndex]) -> None:
    """SQLite: merge each FTS5 index into one segment, which drops deleted rows' words from its
    pages (``secure_delete`` zeroes the pages freed). PostgreSQL keeps no copy to compact: a GIN
    index's dead entries point at dead rows and go with them at VACUUM (docs/COMPLIANCE.md)."""
    # Raw: no ORM form (FTS5's optimize command)
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        for index in indexes:
            table = index.fts_table
            cursor.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")  # noqa: S608 (constant SQL)


def _text_clean(query: Any, *, field: str = "q", max_length: int = MAX_QUERY_LENGTH) -> str:
    """The query as text both databases can read, or a 400 (``field``) saying why not."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput.for_field(field, "Give the words to search for.")
    if len(query) > max_length:
        raise InvalidInput.for_field(field, f"At most {max_length} characters.")
    if _CONTROL.search(query):
        raise InvalidInput.for_field(field, "Control characters cannot be searched.")
    try:
        query.encode()
    except UnicodeEncodeError:
        raise InvalidInput.for_field(field, LONE_SURROGATE) from None
    return query


def query_clean(query: Any) -> str:
    """The query, or a 400 saying why it cannot be searched."""
    query = _text_clean(query)
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


def _fts5_phrase(phrase: str) -> str:
    return '"' + phrase.replace('"', '""') + '"'


def fts5_query(query: str) -> str:
    """The query in FTS5's syntax, every phrase quoted: AND within an alternative, then OR, as
    ``websearch_to_tsquery`` reads it. An alternative with only words to exclude is dropped (FTS5
    cannot say "everything but")."""

    return " OR ".join(
        "(" + " ".join(map(_fts5_phrase, positives)) + "".join(f" NOT {_fts5_phrase(p)}" for p in negatives) + ")"
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
    newest: str,
    joins: str = "",
    owner: tuple[Any, ...] = (),
    limit: int,
    offset: int = 0,
) -> list[Hit]:
    """The rows of ``index`` within ``scope`` (SQL over ``t``) matching ``query`` (already
    cleaned): the newest ``RANKED_MATCHES`` of them (highest ``newest``, SQL over ``t``, then
    highest id), best first, ties highest id first; each with ``columns`` (SQL over ``t`` and
    ``joins``), its rank and a snippet of its text with the matched words between ``MARK``s.

    Only the newest matches are ranked so that a common word costs the same at any size: an index
    on (the columns ``scope`` holds equal, ``newest``, id) hands them newest first and the scan
    stops at the bound instead of ranking every match (docs/PERFORMANCE.md, "Search"). Ordered by
    ``newest`` rather than the id alone, which the primary key also serves: PostgreSQL would walk
    the whole table's key backwards, every tenant's rows, to reach an old user's.

    ``owner``: the values of the index's ``pg_owner`` columns, which ``scope`` holds equal. On
    PostgreSQL, for an owner of at most ``OWNER_MATCH_ROWS`` rows (the planner's estimate), the
    query holds the owner's lexeme too, so the GIN index hands over that owner's matches alone, not
    every owner's; a larger owner's rows are walked newest first as above."""
    # Raw: benchmarks/search.py p99 target, flat to 1,000,000 messages; no ORM form of FTS5's MATCH and bm25
    if connection.vendor == "postgresql":
        match, owner_params = "q", []
        if index.pg_owner and owner and _rows_estimate(connection, index, scope, scope_params) <= OWNER_MATCH_ROWS:
            match, owner_params = "(q && %s::tsquery)", [f"'{owner_lexeme(*owner)}'"]
        sql = f"""
            SELECT {columns}, hit.rank, ts_headline('simple', {index.pg_text}, q, %s)
            FROM (
                SELECT newest.id, ts_rank(newest.vector, q) AS rank
                FROM (
                    SELECT t.id, {index.pg_vector} AS vector
                    FROM {index.table} t, websearch_to_tsquery('simple', %s) q
                    WHERE {scope} AND {index.pg_vector} @@ {match}
                    ORDER BY {newest} DESC, t.id DESC LIMIT %s
                ) newest, websearch_to_tsquery('simple', %s) q
                ORDER BY rank DESC, newest.id DESC LIMIT %s OFFSET %s
            ) hit
            JOIN {index.table} t ON t.id = hit.id {joins}, websearch_to_tsquery('simple', %s) q
            ORDER BY hit.rank DESC, t.id DESC"""  # noqa: S608 (constant SQL of the index and caller; values are parameters)
        params = [_HEADLINE_OPTIONS, query, *scope_params, *owner_params, RANKED_MATCHES, query, limit, offset, query]
    else:
        f = index.fts_table  # FTS5's functions and MATCH take the table's name, not an alias
        match = fts5_query(query)
        sql = f"""
            SELECT {columns}, -bm25({f}), snippet({f}, 0, '{MARK}', '{MARK}', ' … ', 16)
            FROM {f} JOIN {index.table} t ON t.id = {f}.rowid {joins}
            WHERE {f} MATCH %s AND t.id IN (
                SELECT t.id FROM {index.table} t
                WHERE {scope} AND t.id IN (SELECT rowid FROM {f} WHERE {f} MATCH %s)
                ORDER BY {newest} DESC, t.id DESC LIMIT %s
            )
            ORDER BY bm25({f}), t.id DESC LIMIT %s OFFSET %s"""  # noqa: S608 (as above)
        params = [match, *scope_params, match, RANKED_MATCHES, limit, offset]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [Hit(row=tuple(row[:-2]), rank=float(row[-2]), snippet=row[-1] or "") for row in cursor.fetchall()]


def _rows_estimate(connection: BaseDatabaseWrapper, index: TextIndex, scope: str, scope_params: list[Any]) -> int:
    """How many rows of ``index`` the planner expects within ``scope``: planned, not run."""
    # Raw: benchmarks/search.py p99 target; the planner's estimate of raw SQL's scope (EXPLAIN)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {index.table} t WHERE {scope}", scope_params)  # noqa: S608 (constant SQL of the index and caller; values are parameters)
        plan = cursor.fetchone()[0]
    return int((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]["Plan Rows"])


def query_words(query: str) -> list[str]:
    """The query's distinct words, the first ``MAX_WORDS``: the pieces between spaces that hold a
    letter or digit, told apart in any case."""
    words: dict[str, str] = {}
    for piece in query.split():
        if _SEARCHABLE.search(piece):
            words.setdefault(piece.casefold(), piece)
    return list(words.values())[:MAX_WORDS]


def words_clean(query: Any, *, field: str = "q") -> list[str]:
    """``query_words`` for a search that matches any of them, or a 400 (``field``) saying why not."""
    words = query_words(_text_clean(query, field=field, max_length=MAX_WORDS_QUERY_LENGTH))
    if not words:
        raise InvalidInput.for_field(field, "Give at least one word (letters or digits).")
    return words


def text_search_any(
    index: TextIndex,
    *,
    connection: BaseDatabaseWrapper,
    words: list[str],
    scope: str,
    scope_params: list[Any],
    newest: str,
    limit: int | None = None,
    offset: int = 0,
) -> list[tuple[int, float]]:
    """The ids of the rows of ``index`` within ``scope`` (SQL over ``t``) holding any of ``words``
    (from ``words_clean``), best first, with their score: how many of the words a row holds, plus
    (below 1) how rare they are, the mean over them of 1 / the rows in scope holding the word.
    Ties: the row whose ``newest`` (SQL over ``t``) is highest first, then the highest id.

    Each word matches as the index's tokenizer reads it (a piece like "e-mail" as its phrase),
    whole and in any case; no stemming."""
    # Raw: benchmarks/memory.py search beside PostgresStore (no target); no ORM form of FTS5's MATCH
    if connection.vendor == "postgresql":
        match = f"{index.pg_vector} @@ plainto_tsquery('simple', %s)"
        terms = list(words)
    else:
        match = f"t.id IN (SELECT rowid FROM {index.fts_table} WHERE {index.fts_table} MATCH %s)"  # noqa: S608 (constant SQL)
        terms = [_fts5_phrase(word) for word in words]
    held = [f"m{i}" for i in range(len(terms))]
    flags = ", ".join(f"CASE WHEN {match} THEN 1 ELSE 0 END AS {m}" for m in held)
    rarity = " + ".join(f"COALESCE({m} * 1.0 / NULLIF(SUM({m}) OVER (), 0), 0)" for m in held)
    page = "" if limit is None else "LIMIT %s OFFSET %s"
    sql = f"""
        SELECT id, n + r / n AS score FROM (
            SELECT id, newest, {" + ".join(held)} AS n, {rarity} AS r FROM (
                SELECT t.id, {newest} AS newest, {flags}
                FROM {index.table} t
                WHERE ({scope}) AND ({" OR ".join([match] * len(terms))})
            ) flagged
        ) scored
        ORDER BY score DESC, newest DESC, id DESC {page}"""  # noqa: S608 (constant SQL of the index and caller; values are parameters)
    params = [*terms, *scope_params, *terms, *([] if limit is None else [limit, offset])]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(row_id, float(score)) for row_id, score in cursor.fetchall()]


def text_match(index: TextIndex, *, query: str) -> RawSQL:
    """The ids of every row of ``index`` matching ``query`` (already cleaned), as a subquery for
    ``pk__in``: a filter on any queryset of the table (the admin's)."""
    # Raw: benchmarks/admin_scale.py page-time target at 1,000,000 messages; no ORM form of FTS5's MATCH
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
