"""Memory generations move at commit (PostgreSQL): a write to memory items or vectors notes its
(tenant, bucket) pairs in ``userdata_app_memorygeneration_pending`` under its transaction's id, and
a deferred trigger moves their counters once, as the transaction commits, in order. The counter
rows were locked from a transaction's first write of memory to its end: a person's put waited
for a long batch of another person whose user id hashes to the same of the tenant's 64 buckets
(ADK's ``add_session_to_memory`` of a large session, an erasure). A pending row names the writing
transaction only and is deleted at its commit (or with it, rolled back). A search adds its own
transaction's pending pairs to the counters it reads, so a search after a write in one transaction
lists that write. SQLite (one writer at a time) is unchanged."""

from importlib import import_module

from django.db import migrations

before = import_module("userdata_app.migrations.0020_memory_generation")

GENERATION, ITEM, VECTOR, EVENTS = before.GENERATION, before.ITEM, before.VECTOR, before.EVENTS
PENDING = "userdata_app_memorygeneration_pending"
AT_COMMIT = "memory_generation_at_commit"

NOTE = (
    f"INSERT INTO {PENDING} (txid, tenant_pk, bucket) "
    "SELECT DISTINCT txid_current(), {rows} ON CONFLICT DO NOTHING; RETURN NULL;"
)
# The first pending row's trigger moves every pair its transaction noted, in order (two
# transactions lock counter rows alike); the later ones find theirs gone.
MOVE = (
    f"WITH noted AS (DELETE FROM {PENDING} WHERE txid = NEW.txid RETURNING tenant_pk, bucket) "  # noqa: S608
    f"INSERT INTO {GENERATION} AS g (tenant_pk, bucket, value) SELECT tenant_pk, bucket, 1 FROM noted "
    "ORDER BY 1, 2 ON CONFLICT (tenant_pk, bucket) DO UPDATE SET value = g.value + 1; RETURN NULL;"
)


def _function(name: str, body: str) -> str:
    return f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} END $$"


def at_commit(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE TABLE {PENDING} (txid bigint NOT NULL, tenant_pk bigint NOT NULL, bucket smallint NOT NULL, "
        "PRIMARY KEY (txid, tenant_pk, bucket))"
    )
    schema_editor.execute(_function(AT_COMMIT, MOVE))
    schema_editor.execute(
        f"CREATE CONSTRAINT TRIGGER {AT_COMMIT} AFTER INSERT ON {PENDING} DEFERRABLE INITIALLY DEFERRED "
        f"FOR EACH ROW EXECUTE FUNCTION {AT_COMMIT}()"
    )
    for table in (ITEM, VECTOR):
        for event in EVENTS:
            schema_editor.execute(
                _function(f"{table}_generation_{event.lower()}", NOTE.format(rows=before.PG_ROWS[table]))
            )


def at_write(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in (ITEM, VECTOR):
        for event in EVENTS:
            schema_editor.execute(
                _function(f"{table}_generation_{event.lower()}", before.BUMP.format(rows=before.PG_ROWS[table]))
            )
    schema_editor.execute(f"DROP TABLE {PENDING}")  # its trigger with it
    schema_editor.execute(f"DROP FUNCTION {AT_COMMIT}()")


class Migration(migrations.Migration):
    dependencies = [
        ("userdata_app", "0020_memory_generation"),
    ]

    operations = [migrations.RunPython(at_commit, at_write)]
