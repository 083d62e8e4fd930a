"""Memory lineage: an item's sources (``MemorySource``) and the tenant's memory policy (the memory
item table is not altered: on SQLite that would rebuild it and drop its search triggers). ADK memories stored before keep working: their sources are derived from the session
id their values hold (a session kept here is linked); other items have none."""

import unicodedata

import django.db.models.deletion
from django.db import migrations, models

import agentstate.subject_data

BATCH = 1000


def _encode(value: str) -> str:
    """The ADK client's ``identifier_encode`` as it was (a migration keeps its own copy)."""
    if value == "":
        return "%"
    return "".join(f"%{ord(ch):02X}" if ch in "%/" or unicodedata.category(ch) == "Cc" else ch for ch in value)


def adk_sources(apps, schema_editor):
    """An ADK memory (namespace ``users.<user>.adk-memory.<app>``) with a ``session_id`` in its
    value gets that session as its source, the item's key (the event's id) as ``ref``."""
    MemoryItem = apps.get_model("userdata_app", "MemoryItem")
    MemorySource = apps.get_model("userdata_app", "MemorySource")
    Session = apps.get_model("sessions_app", "Session")
    items = MemoryItem.objects.filter(
        namespace__regex=r"^users\.[^.]*\.adk-memory\.[^.]*$", value__has_key="session_id"
    )
    last = 0
    while True:
        batch = list(items.filter(pk__gt=last).order_by("pk")[:BATCH])
        if not batch:
            return
        last = batch[-1].pk
        sources = []
        for item in batch:
            session_id = item.value.get("session_id")
            if not isinstance(session_id, str):
                continue
            app_name = item.namespace.split(".")[3].replace("%2E", ".")
            session = Session.objects.filter(
                tenant_id=item.tenant_id, user_id=item.user_id, app_name=app_name, session_id=_encode(session_id)
            ).first()
            sources.append(
                MemorySource(
                    item=item, linked_session=session, app_name=app_name, session_id=_encode(session_id), ref=item.key
                )
            )
        MemorySource.objects.bulk_create(sources, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0020_langgraph_channel_values"),
        ("tenancy", "0003_api_key_user"),
        ("userdata_app", "0017_erasure_receipt_withheld"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryPolicy",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("keep_derived", models.BooleanField(default=False)),
                (
                    "tenant",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenancy.tenant"
                    ),
                ),
            ],
            options={
                "verbose_name": "memory policy",
                "verbose_name_plural": "memory policies",
            },
        ),
        migrations.CreateModel(
            name="MemorySource",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("app_name", models.CharField(blank=True, default="", max_length=512)),
                ("session_id", models.CharField(blank=True, default="", max_length=512)),
                ("thread_id", models.TextField(blank=True, default="")),
                ("ref", models.CharField(blank=True, default="", max_length=512)),
                ("session_deleted", models.BooleanField(default=False)),
                (
                    "item",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="sources",
                        to="userdata_app.memoryitem",
                    ),
                ),
                (
                    "linked_session",
                    models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=agentstate.subject_data.derived_cascade,
                        related_name="+",
                        to="sessions_app.session",
                    ),
                ),
            ],
            options={
                "verbose_name": "memory source",
                "indexes": [
                    models.Index(
                        condition=models.Q(("linked_session__isnull", False)),
                        fields=["linked_session"],
                        name="memory_source_session",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("item", "app_name", "session_id", "thread_id", "ref"), name="memory_source_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(adk_sources, migrations.RunPython.noop),
    ]
