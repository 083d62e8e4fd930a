"""LangGraph's retention rule leaves the core's policy: ``keep_latest_checkpoints`` becomes a rule the
LangGraph backend registers, its value kept in the policy's ``backend_rules`` (by the rule's name).
Existing values move there; reversible: they move back into the column."""

from django.db import migrations, models

RULE = "keep_latest_checkpoints"


def rules_to_json(apps, schema_editor):
    RetentionPolicy = apps.get_model("sessions_app", "RetentionPolicy")
    for policy in RetentionPolicy.objects.exclude(**{f"{RULE}__isnull": True}):
        policy.backend_rules = {**policy.backend_rules, RULE: getattr(policy, RULE)}
        policy.save(update_fields=["backend_rules"])


def rules_to_column(apps, schema_editor):
    RetentionPolicy = apps.get_model("sessions_app", "RetentionPolicy")
    for policy in RetentionPolicy.objects.all():
        value = policy.backend_rules.get(RULE)
        if value is not None:
            setattr(policy, RULE, value)
            policy.save(update_fields=[RULE])


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0021_retention_run_derived"),
    ]

    operations = [
        migrations.AddField(
            model_name="retentionpolicy",
            name="backend_rules",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(rules_to_json, rules_to_column),
        migrations.RemoveField(
            model_name="retentionpolicy",
            name=RULE,
        ),
    ]
