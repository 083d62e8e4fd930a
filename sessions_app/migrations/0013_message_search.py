"""Full-text search over message history (agentstate.search): the index is kept by the database
itself, so every path that writes messages (appends, edits, forks, erasure, retention, raw bulk
deletes) keeps it in step in its own transaction, with no code of its own.

PostgreSQL: a stored generated column (the message content's string values as a ``simple``
tsvector; adding it rewrites the table once) with a GIN index, built CONCURRENTLY so writes go on
while it indexes the existing messages. Stored rather than an index on the expression: ranking the matches with ``ts_rank`` would
recompute the vector from the content of every match, while an append costs the same either way
(docs/PERFORMANCE.md, "Search").

SQLite: an FTS5 table keyed by the message's id, filled by triggers on the messages table, and
backfilled here from the messages already stored. Triggers rather than service code because
queryset deletes and cascades issue their own SQL. A later migration that makes SQLite rebuild the
messages table drops these triggers: it must create them again (tests/sessions_app/test_search.py
fails when they are missing)."""

import contextlib

from django.db import migrations, transaction

# Keep in step with sessions_app.selectors.MESSAGE_INDEX.
PG_CREATE = [
    "ALTER TABLE sessions_app_message ADD COLUMN IF NOT EXISTS search_vector tsvector GENERATED ALWAYS AS "
    "(jsonb_to_tsvector('simple'::regconfig, content, '[\"string\"]'::jsonb)) STORED",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS message_search ON sessions_app_message USING gin (search_vector)",
]
PG_DROP = [
    "DROP INDEX CONCURRENTLY IF EXISTS message_search",
    "ALTER TABLE sessions_app_message DROP COLUMN IF EXISTS search_vector",
]

SQLITE_TEXT = "(SELECT group_concat(value, ' ') FROM json_tree({row}.content) WHERE type = 'text')"
SQLITE_CREATE = [
    "CREATE VIRTUAL TABLE sessions_app_message_search USING fts5(text, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TRIGGER sessions_app_message_search_insert AFTER INSERT ON sessions_app_message BEGIN "  # noqa: S608 (constant SQL)
    f"INSERT INTO sessions_app_message_search (rowid, text) VALUES (new.id, {SQLITE_TEXT.format(row='new')}); END",
    "CREATE TRIGGER sessions_app_message_search_delete AFTER DELETE ON sessions_app_message BEGIN "
    "DELETE FROM sessions_app_message_search WHERE rowid = old.id; END",
    "CREATE TRIGGER sessions_app_message_search_update AFTER UPDATE OF content ON sessions_app_message BEGIN "  # noqa: S608 (constant SQL)
    "DELETE FROM sessions_app_message_search WHERE rowid = old.id; "
    f"INSERT INTO sessions_app_message_search (rowid, text) VALUES (new.id, {SQLITE_TEXT.format(row='new')}); END",
    "INSERT INTO sessions_app_message_search (rowid, text) "  # noqa: S608 (constant SQL)
    f"SELECT id, {SQLITE_TEXT.format(row='m')} FROM sessions_app_message m",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS sessions_app_message_search_insert",
    "DROP TRIGGER IF EXISTS sessions_app_message_search_delete",
    "DROP TRIGGER IF EXISTS sessions_app_message_search_update",
    "DROP TABLE IF EXISTS sessions_app_message_search",
]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor) -> None:
        connection = schema_editor.connection
        # SQLite: in one transaction, so no message written meanwhile is indexed twice or missed.
        atomic = connection.vendor == "sqlite"
        with transaction.atomic(using=connection.alias) if atomic else contextlib.nullcontext():
            for statement in statements.get(connection.vendor, []):
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    atomic = False  # PostgreSQL builds the index CONCURRENTLY, which no transaction may hold

    dependencies = [
        ("sessions_app", "0012_session_owned_rows"),
    ]

    operations = [
        migrations.RunPython(
            _run({"postgresql": PG_CREATE, "sqlite": SQLITE_CREATE}),
            _run({"postgresql": PG_DROP, "sqlite": SQLITE_DROP}),
        ),
    ]
