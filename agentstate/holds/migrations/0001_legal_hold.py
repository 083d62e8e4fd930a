"""Legal holds (agentstate.holds): placing and releasing need permissions of their own."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("tenancy", "0002_api_keys"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="LegalHold",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "user_id",
                    models.CharField(blank=True, help_text="Empty: every person of the tenant.", max_length=128),
                ),
                (
                    "session_pk",
                    models.BigIntegerField(blank=True, help_text="Empty: every session of the person.", null=True),
                ),
                (
                    "subject_hash",
                    models.CharField(
                        blank=True,
                        editable=False,
                        help_text="Set when the person was erased after the release.",
                        max_length=64,
                    ),
                ),
                (
                    "reference",
                    models.CharField(
                        help_text="A case or matter number. API clients whose deletes the hold refuses see it: no names.",
                        max_length=200,
                    ),
                ),
                ("reason", models.TextField(help_text="Why the data must be kept. Only staff see it.")),
                ("placed_at", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ("placed_by_name", models.CharField(blank=True, editable=False, max_length=150)),
                ("released_at", models.DateTimeField(blank=True, editable=False, null=True)),
                ("released_by_name", models.CharField(blank=True, editable=False, max_length=150)),
                ("release_reason", models.TextField(blank=True, editable=False)),
                (
                    "placed_by",
                    models.ForeignKey(
                        blank=True,
                        editable=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "released_by",
                    models.ForeignKey(
                        blank=True,
                        editable=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name="+", to="tenancy.tenant"
                    ),
                ),
            ],
            options={
                "verbose_name": "legal hold",
                "permissions": [
                    ("place_legalhold", "Can place legal holds"),
                    ("release_legalhold", "Can release legal holds"),
                ],
                "indexes": [
                    models.Index(
                        condition=models.Q(("released_at__isnull", True)),
                        fields=["tenant", "user_id"],
                        name="legal_hold_active",
                    )
                ],
            },
        ),
    ]
