"""The index of a JSON column's strings as migrations make it: the statements by database vendor,
and the migration operation that runs them."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from django.db import migrations, transaction

from agentstate.search.engine import owner_lexeme_sql

if TYPE_CHECKING:
    from collections.abc import Callable


def json_text_index_sql(
    *, table: str, column: str, pg_index: str, owner: tuple[str, ...] = ()
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The statements, by database vendor, that create and that drop the index of every string
    value of ``table``'s JSON ``column`` (``json_text_index_operation`` says what they make); on
    PostgreSQL each row's vector holds its ``owner`` columns' lexeme too (``owner_lexeme``)."""
    vector = f"jsonb_to_tsvector('simple'::regconfig, {column}, '[\"string\"]'::jsonb)"
    if owner:
        vector = f"{vector} || {owner_lexeme_sql(owner)}"
    fts = f"{table}_search"
    text = f"(SELECT group_concat(value, ' ') FROM json_tree({{row}}.{column}) WHERE type = 'text')"  # noqa: S608 (constant SQL)
    insert = f"INSERT INTO {fts} (rowid, text) VALUES (new.id, {text.format(row='new')})"  # noqa: S608 (constant SQL)
    create = {
        "postgresql": [
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS search_vector tsvector "
            f"GENERATED ALWAYS AS ({vector}) STORED",
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {pg_index} ON {table} USING gin (search_vector)",
        ],
        "sqlite": [
            f"CREATE VIRTUAL TABLE {fts} USING fts5(text, tokenize = 'unicode61 remove_diacritics 2')",
            f"CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN {insert}; END",
            f"CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN DELETE FROM {fts} WHERE rowid = old.id; END",  # noqa: S608 (constant SQL)
            f"CREATE TRIGGER {fts}_update AFTER UPDATE OF {column} ON {table} BEGIN "  # noqa: S608 (constant SQL)
            f"DELETE FROM {fts} WHERE rowid = old.id; {insert}; END",
            f"INSERT INTO {fts} (rowid, text) SELECT id, {text.format(row='m')} FROM {table} m",  # noqa: S608 (constant SQL)
        ],
    }
    drop = {
        "postgresql": [
            f"DROP INDEX CONCURRENTLY IF EXISTS {pg_index}",
            f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_vector",
        ],
        "sqlite": [
            *(f"DROP TRIGGER IF EXISTS {fts}_{event}" for event in ("insert", "delete", "update")),
            f"DROP TABLE IF EXISTS {fts}",
        ],
    }
    return create, drop


def json_text_index_operation(*, table: str, column: str, pg_index: str) -> migrations.RunPython:
    """The migration operation that indexes every string value of ``table``'s JSON ``column``.

    PostgreSQL: a stored generated tsvector column ``search_vector`` (``simple``: words lowercased,
    no stemming; adding it rewrites the table once) with a GIN index ``pg_index`` built
    CONCURRENTLY, so the migration must say ``atomic = False``. SQLite: an FTS5 table
    ``<table>_search`` keyed by the row's id, filled by triggers (``unicode61``, diacritics
    removed) and backfilled from the rows already stored, in one transaction. Either way the
    database keeps the index in the writing transaction, whatever SQL writes or deletes the rows."""
    create, drop = json_text_index_sql(table=table, column=column, pg_index=pg_index)

    def run(statements: dict[str, list[str]]) -> Callable[..., None]:
        def apply(apps: Any, schema_editor: Any) -> None:
            # Raw: no ORM form (a generated tsvector column, FTS5 tables and triggers: migration DDL)
            db = schema_editor.connection
            # SQLite: in one transaction, so no row written meanwhile is indexed twice or missed.
            with transaction.atomic(using=db.alias) if db.vendor == "sqlite" else contextlib.nullcontext():
                for statement in statements.get(db.vendor, []):
                    schema_editor.execute(statement)

        return apply

    return migrations.RunPython(run(create), run(drop))
