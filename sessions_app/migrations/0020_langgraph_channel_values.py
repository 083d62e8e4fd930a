"""LangGraph's channel values stored by version, apart from the checkpoints, as LangGraph's own
database savers keep them: a step sends and stores only the channels it changed. Existing
checkpoints are split here: each msgpack checkpoint's non-primitive channel values move to
``LangGraphBlob`` at the version its ``channel_versions`` names (an integer's digits, or the string
as it is: threads imported from ``SqliteSaver`` and ``PostgresSaver`` count in strings), the
primitives stay in it. A checkpoint in another serializer format (a pickle, an encrypted value)
stays whole: the reads answer it as it is. Reversible: the values go back into their checkpoints."""

import django.db.models.deletion
import django.utils.timezone
import ormsgpack
from django.db import migrations, models

BATCH = 500
OPTIONS = ormsgpack.OPT_NON_STR_KEYS


def _ext(code, data):
    """Extension values (messages, models, datetimes) kept as they were written, byte for byte."""
    return ormsgpack.Ext(code, data)


def _version_text(version):
    """As ``services.version_text``: a string as it is, a number's digits; None for anything else."""
    if isinstance(version, str):
        return version
    if isinstance(version, (int, float)) and not isinstance(version, bool):
        return str(version)
    return None


def _inline(value):
    return value is None or isinstance(value, (str, int, float, bool))


def _msgpack_batches(Checkpoint):
    """The msgpack checkpoints in batches of BATCH, by primary key."""
    rows = Checkpoint.objects.filter(value_type="msgpack").order_by("pk")
    last = 0
    while batch := list(rows.filter(pk__gt=last)[:BATCH]):
        last = batch[-1].pk
        yield batch


def split_checkpoints(apps, schema_editor):
    Checkpoint = apps.get_model("sessions_app", "LangGraphCheckpoint")
    Blob = apps.get_model("sessions_app", "LangGraphBlob")
    for batch in _msgpack_batches(Checkpoint):
        blobs, changed = [], []
        for c in batch:
            try:
                checkpoint = ormsgpack.unpackb(bytes(c.value), ext_hook=_ext, option=OPTIONS)
            except (ValueError, TypeError):
                continue  # not LangGraph's msgpack: kept whole
            values = checkpoint.get("channel_values") if isinstance(checkpoint, dict) else None
            versions = c.channel_versions if isinstance(c.channel_versions, dict) else {}
            if not isinstance(values, dict):
                continue
            for channel in list(values):
                version = _version_text(versions.get(channel))
                if _inline(values[channel]) or version is None:
                    continue
                data = ormsgpack.packb(values.pop(channel), option=OPTIONS)
                blobs.append(
                    Blob(
                        session_id=c.session_id,
                        tenant_id=c.tenant_id,
                        user_id=c.user_id,
                        created_at=c.created_at,
                        checkpoint_ns=c.checkpoint_ns,
                        channel=channel,
                        version=version,
                        value_type="msgpack",
                        value=data,
                    )
                )
            c.value = ormsgpack.packb(checkpoint, option=OPTIONS)
            changed.append(c)
        Blob.objects.bulk_create(blobs, ignore_conflicts=True)  # a version names one value
        Checkpoint.objects.bulk_update(changed, ["value"])


def join_checkpoints(apps, schema_editor):
    """The reverse: each checkpoint whole again, its channel values back in it."""
    Checkpoint = apps.get_model("sessions_app", "LangGraphCheckpoint")
    Blob = apps.get_model("sessions_app", "LangGraphBlob")
    for batch in _msgpack_batches(Checkpoint):
        changed = []
        for c in batch:
            versions = c.channel_versions if isinstance(c.channel_versions, dict) else {}
            named = {(ch, _version_text(v)) for ch, v in versions.items()}
            found = Blob.objects.filter(session_id=c.session_id, checkpoint_ns=c.checkpoint_ns, value_type="msgpack")
            found = [b for b in found.filter(channel__in=list(versions)) if (b.channel, b.version) in named]
            if not found:
                continue
            checkpoint = ormsgpack.unpackb(bytes(c.value), ext_hook=_ext, option=OPTIONS)
            for b in found:
                checkpoint["channel_values"][b.channel] = ormsgpack.unpackb(
                    bytes(b.value), ext_hook=_ext, option=OPTIONS
                )
            c.value = ormsgpack.packb(checkpoint, option=OPTIONS)
            changed.append(c)
        Checkpoint.objects.bulk_update(changed, ["value"])


def compress_with_lz4(apps, schema_editor):
    """As the checkpoints' and writes' values (0014): LZ4 where PostgreSQL has it."""
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    if row and row[0]:
        schema_editor.execute("ALTER TABLE sessions_app_langgraphblob ALTER COLUMN value SET COMPRESSION lz4")


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0019_message_search_owner"),
        ("tenancy", "0002_api_keys"),
    ]

    operations = [
        migrations.CreateModel(
            name="LangGraphBlob",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("user_id", models.CharField(max_length=128)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("checkpoint_ns", models.TextField(blank=True, default="")),
                ("channel", models.TextField()),
                ("version", models.TextField()),
                ("value_type", models.CharField(max_length=32)),
                ("value", models.BinaryField()),
                (
                    "session",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.session",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="tenancy.tenant",
                    ),
                ),
            ],
            options={
                "verbose_name": "LangGraph channel value",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("session", "checkpoint_ns", "channel", "version"), name="lg_blob_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(compress_with_lz4, migrations.RunPython.noop),
        migrations.RunPython(split_checkpoints, join_checkpoints),
    ]
