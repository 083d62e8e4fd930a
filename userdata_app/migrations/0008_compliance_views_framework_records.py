"""The Compliance group may view what the framework backends and retention keep: LangGraph
threads, checkpoints and writes, ADK events and user state, retention policies and runs. An officer
checking a subject's data, or why a session went, opens those pages too."""

from django.db import migrations

from userdata_app.migrations._grants import grant_to_compliance, revoke_from_compliance

PERMISSIONS = {
    "sessions_app": [
        "view_langgraphthread",
        "view_langgraphcheckpoint",
        "view_langgraphwrite",
        "view_adkevent",
        "view_retentionpolicy",
        "view_retentionrun",
    ],
    "userdata_app": ["view_adkuserstate"],
}


def grant_views(apps, schema_editor):
    grant_to_compliance(apps, PERMISSIONS)


def revoke_views(apps, schema_editor):
    revoke_from_compliance(apps, PERMISSIONS)


class Migration(migrations.Migration):
    dependencies = [
        ("userdata_app", "0007_erasure_review_permission"),
        ("sessions_app", "0007_retention"),
    ]

    operations = [migrations.RunPython(grant_views, revoke_views)]
