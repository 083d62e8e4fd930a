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

from django.db import migrations

from agentstate.search import json_text_index_operation


class Migration(migrations.Migration):
    atomic = False  # PostgreSQL builds the index CONCURRENTLY, which no transaction may hold

    dependencies = [
        ("sessions_app", "0012_session_owned_rows"),
    ]

    operations = [
        # Keep in step with sessions_app.selectors.MESSAGE_INDEX.
        json_text_index_operation(table="sessions_app_message", column="content", pg_index="message_search"),
    ]
