"""Retention runs name apart the user data made only from the sessions they deleted (memories,
counted in counts as before): a new JSON column, empty for the runs before it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0020_langgraph_channel_values"),
    ]

    operations = [
        migrations.AddField(
            model_name="retentionrun",
            name="derived",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
