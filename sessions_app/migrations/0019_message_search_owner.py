"""Each message's search vector holds its owner beside its words (agentstate.search
``owner_lexeme``): a search of a user with few messages ANDs the user's lexeme into the query, so
the GIN index hands over that user's matches alone. With the words alone, a word common in a
large tenant's history cost a small tenant every tenant's matches of it (docs/PERFORMANCE.md,
"Search").

PostgreSQL: the generated column is defined anew, which rewrites the messages table under an
exclusive lock (about 20 s per million messages on the benchmark machine: plan a window for a large
history), then its GIN index is built CONCURRENTLY, while searches read without it. SQLite's FTS5
index is unchanged."""

from typing import Any

from django.db import migrations

from agentstate.search import json_text_index_sql

OWNER = ("tenant_id", "user_id")  # sessions_app.selectors.MESSAGE_INDEX.pg_owner


def vector_define(owner: tuple[str, ...], previous: tuple[str, ...]) -> Any:
    def apply(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        index = {"table": "sessions_app_message", "column": "content", "pg_index": "message_search"}
        _, drop = json_text_index_sql(**index, owner=previous)
        create, _ = json_text_index_sql(**index, owner=owner)
        for statement in [*drop["postgresql"], *create["postgresql"]]:
            schema_editor.execute(statement)

    return apply


class Migration(migrations.Migration):
    atomic = False  # PostgreSQL builds the index CONCURRENTLY, which no transaction may hold

    dependencies = [
        ("sessions_app", "0018_message_user_newest"),
    ]

    operations = [
        migrations.RunPython(vector_define(OWNER, ()), vector_define((), OWNER)),
    ]
