"""Artifacts (Google ADK's artifact service), user data, and the files owed after their deletion;
the Compliance group may view artifacts."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from userdata_app.migrations._grants import grant_to_compliance, revoke_from_compliance

PERMISSIONS = {"userdata_app": ["view_artifact"]}


def grant_views(apps, schema_editor):
    grant_to_compliance(apps, PERMISSIONS)


def revoke_views(apps, schema_editor):
    revoke_from_compliance(apps, PERMISSIONS)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0013_message_search"),
        ("tenancy", "0002_api_keys"),
        ("userdata_app", "0014_access_requests"),
    ]

    operations = [
        migrations.CreateModel(
            name="ArtifactFileOwed",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("content", models.CharField(max_length=255, unique=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "verbose_name": "artifact file owed",
            },
        ),
        migrations.CreateModel(
            name="Artifact",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("user_id", models.CharField(max_length=128)),
                ("app_name", models.CharField(max_length=128)),
                ("session_id", models.CharField(blank=True, default="", max_length=128)),
                ("filename", models.CharField(max_length=255)),
                ("version", models.PositiveIntegerField()),
                (
                    "kind",
                    models.CharField(
                        choices=[("inline_data", "Inline Data"), ("text", "Text"), ("file_data", "File Data")],
                        max_length=16,
                    ),
                ),
                ("mime_type", models.CharField(blank=True, max_length=255, null=True)),
                ("file_uri", models.TextField(blank=True, default="")),
                (
                    "content",
                    models.CharField(blank=True, default="", help_text="The file's name in storage.", max_length=255),
                ),
                ("size", models.PositiveBigIntegerField(default=0)),
                ("custom_metadata", models.JSONField(default=dict)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "adk_session",
                    models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="sessions_app.session",
                    ),
                ),
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
                "indexes": [
                    models.Index(
                        condition=models.Q(("adk_session__isnull", False)),
                        fields=["adk_session"],
                        name="artifact_adk_session",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant", "user_id", "app_name", "session_id", "filename", "version"),
                        name="artifact_unique",
                    )
                ],
            },
        ),
        migrations.RunPython(grant_views, revoke_views),
    ]
