"""Memory items (LangGraph's store), user data; the Compliance group may view them."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from userdata_app.migrations._grants import grant_to_compliance, revoke_from_compliance

PERMISSIONS = {"userdata_app": ["view_memoryitem"]}


def grant_views(apps, schema_editor):
    grant_to_compliance(apps, PERMISSIONS)


def revoke_views(apps, schema_editor):
    revoke_from_compliance(apps, PERMISSIONS)


class Migration(migrations.Migration):
    dependencies = [
        ("tenancy", "0002_api_keys"),
        ("userdata_app", "0009_erasure_storage_pending_owed"),
    ]

    operations = [
        migrations.CreateModel(
            name="MemoryItem",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("user_id", models.CharField(max_length=128)),
                ("namespace", models.CharField(max_length=1024)),
                ("key", models.CharField(max_length=512)),
                ("value", models.JSONField()),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("ttl_minutes", models.FloatField(blank=True, null=True)),
                ("expires_at", models.DateTimeField(blank=True, null=True)),
                (
                    "tenant",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="tenancy.tenant",
                    ),
                ),
            ],
            options={
                "verbose_name": "memory item",
                "indexes": [
                    models.Index(fields=["tenant", "user_id"], name="memory_item_subject"),
                    models.Index(fields=["expires_at"], name="memory_item_expires_at"),
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("tenant", "namespace", "key"), name="memory_item_unique")
                ],
            },
        ),
        migrations.RunPython(grant_views, revoke_views),
    ]
