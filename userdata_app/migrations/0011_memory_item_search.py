"""Full-text search over memory items (agentstate.search): every string value of an item's value,
indexed by the database itself (a stored generated tsvector with a GIN index on PostgreSQL, an FTS5
table kept by triggers on SQLite), so puts, deletes, the TTL sweep and erasure keep the index in
step in their own transaction. Keep in step with userdata_app.memory.selectors.MEMORY_INDEX. A later
migration that makes SQLite rebuild the memory item table drops the triggers: it must create them
again (tests/userdata_app/test_memory_search.py fails when they are missing)."""

from django.db import migrations

from agentstate.search import json_text_index_operation


class Migration(migrations.Migration):
    atomic = False  # PostgreSQL builds the index CONCURRENTLY, which no transaction may hold

    dependencies = [
        ("userdata_app", "0010_memory_item"),
    ]

    operations = [
        json_text_index_operation(table="userdata_app_memoryitem", column="value", pg_index="memory_item_search"),
    ]
