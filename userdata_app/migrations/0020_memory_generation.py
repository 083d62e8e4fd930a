"""Memory generations: a counter per tenant (and, on PostgreSQL, per bucket of its people) that
triggers move on every insert, update and delete of memory items and of their vectors, in the
writing transaction, whatever the path (a put, a delete, erasure, a session's delete taking derived
memories, the TTL sweep, an import). A worker's copy of a scope's vectors (vector_cache) is checked
against it on each search by meaning. PostgreSQL: one statement-level trigger per table and event
(transition tables); SQLite: a row-level trigger each. A later migration that makes SQLite rebuild
the memory item or vector table drops the triggers: it must create them again
(tests/userdata_app/test_memory_vector_cache.py fails when they are missing)."""

from django.db import migrations, models

GENERATION = "userdata_app_memorygeneration"
ITEM = "userdata_app_memoryitem"
VECTOR = "userdata_app_memoryvector"
EVENTS = ("INSERT", "UPDATE", "DELETE")

# PostgreSQL: the changed rows' (tenant, bucket) pairs, in order (two writers lock rows alike).
BUMP = (
    f"INSERT INTO {GENERATION} AS g (tenant_pk, bucket, value) "  # noqa: S608 (our own tables' names)
    "SELECT tenant_id, bucket, 1 FROM (SELECT DISTINCT {rows}) changed_pairs(tenant_id, bucket) ORDER BY 1, 2 "
    "ON CONFLICT (tenant_pk, bucket) DO UPDATE SET value = g.value + 1; RETURN NULL;"
)
PG_ROWS = {
    ITEM: "tenant_id, hashtext(user_id) & 63 FROM changed",
    VECTOR: f"i.tenant_id, hashtext(i.user_id) & 63 FROM changed v JOIN {ITEM} i ON i.id = v.item_id",
}
# SQLite: the row's tenant (a vector's through its item, which a delete removes after its vectors).
SQLITE_ROW = {
    ITEM: "SELECT {row}.tenant_id, 0, 1 WHERE true",
    VECTOR: f"SELECT tenant_id, 0, 1 FROM {ITEM} WHERE id = {{row}}.item_id",  # noqa: S608
}


def _statements(vendor: str) -> tuple[list[str], list[str]]:
    create, drop = [], []
    for table in (ITEM, VECTOR):
        for event in EVENTS:
            name = f"{table}_generation_{event.lower()}"
            row = "OLD" if event == "DELETE" else "NEW"  # the rows a trigger sees
            if vendor == "postgresql":
                body = BUMP.format(rows=PG_ROWS[table])
                create.append(f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} END $$")
                create.append(
                    f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {row} TABLE AS changed "
                    f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
                )
                drop += [f"DROP TRIGGER IF EXISTS {name} ON {table}", f"DROP FUNCTION IF EXISTS {name}()"]
            elif vendor == "sqlite":
                select = SQLITE_ROW[table].format(row=row)
                create.append(
                    f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN "
                    f"INSERT INTO {GENERATION} (tenant_pk, bucket, value) {select} "
                    "ON CONFLICT (tenant_pk, bucket) DO UPDATE SET value = value + 1; END"
                )
                drop.append(f"DROP TRIGGER IF EXISTS {name}")
    return create, drop


def triggers_create(apps, schema_editor):
    for statement in _statements(schema_editor.connection.vendor)[0]:
        schema_editor.execute(statement)


def triggers_drop(apps, schema_editor):
    for statement in _statements(schema_editor.connection.vendor)[1]:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("userdata_app", "0019_memory_vector"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryGeneration",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("tenant_pk", models.BigIntegerField()),
                ("bucket", models.SmallIntegerField()),
                ("value", models.BigIntegerField(default=0)),
            ],
            options={
                "verbose_name": "memory generation",
                "constraints": [
                    models.UniqueConstraint(fields=("tenant_pk", "bucket"), name="memory_generation_unique")
                ],
            },
        ),
        migrations.RunPython(triggers_create, triggers_drop),
    ]
