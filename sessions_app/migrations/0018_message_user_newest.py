"""A user's messages newest first, across sessions: search ranks only a query's newest matches
(agentstate.search.text_search), and this index hands them over in that order, so a common word
stops the scan at the bound instead of ranking every match (docs/PERFORMANCE.md, "Search").

PostgreSQL builds it CONCURRENTLY, so appends go on while it indexes the existing messages."""

from typing import Any

from django.db import migrations, models

CREATE = (
    "CREATE INDEX {how} IF NOT EXISTS message_user_newest ON sessions_app_message (tenant_id, user_id, created_at, id)"
)


def create(apps: Any, schema_editor: Any) -> None:
    concurrently = schema_editor.connection.vendor == "postgresql"
    schema_editor.execute(CREATE.format(how="CONCURRENTLY" if concurrently else ""))


def drop(apps: Any, schema_editor: Any) -> None:
    concurrently = schema_editor.connection.vendor == "postgresql"
    schema_editor.execute(f"DROP INDEX {'CONCURRENTLY' if concurrently else ''} IF EXISTS message_user_newest")


class Migration(migrations.Migration):
    atomic = False  # PostgreSQL builds the index CONCURRENTLY, which no transaction may hold

    dependencies = [
        ("sessions_app", "0017_retention_run_held"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="message",
                    index=models.Index(fields=["tenant", "user_id", "created_at", "id"], name="message_user_newest"),
                ),
            ],
            database_operations=[migrations.RunPython(create, drop)],
        ),
    ]
