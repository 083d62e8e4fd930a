"""Retention runs report, per tenant and rule, the sessions a legal hold kept from the sweep."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0016_run_usage"),
    ]

    operations = [
        migrations.AddField(
            model_name="retentionrun",
            name="held",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
