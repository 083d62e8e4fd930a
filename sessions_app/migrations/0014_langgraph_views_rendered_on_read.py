"""LangGraph values are stored once: staff's JSON view is rendered when read (``staff_view``), and
on PostgreSQL the values are compressed with LZ4 (a checkpoint carries the whole state, and LZ4
compresses it several times faster than pglz for a little more disk: docs/PERFORMANCE.md)."""

from django.db import migrations

LZ4_COLUMNS = (
    ("sessions_app_langgraphcheckpoint", "value"),
    ("sessions_app_langgraphwrite", "value"),
)


def _lz4_available(cursor) -> bool:
    cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
    row = cursor.fetchone()
    return bool(row and row[0])


def compress_with_lz4(apps, schema_editor):
    """Only where PostgreSQL was built with LZ4 (Debian's and most are); elsewhere pglz stays."""
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        if not _lz4_available(cursor):
            return
        for table, column in LZ4_COLUMNS:
            schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION lz4")


def compress_with_pglz(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, column in LZ4_COLUMNS:
        schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION pglz")


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0013_message_search"),
    ]

    operations = [
        migrations.RemoveField(model_name="langgraphcheckpoint", name="rendered"),
        migrations.RemoveField(model_name="langgraphwrite", name="rendered"),
        migrations.RunPython(compress_with_lz4, compress_with_pglz),
    ]
