"""The "Support" group: staff who help agents' operators read sessions and every framework's
state (messages and OpenAI Agents SDK items, rounds, checkpoints, transitions, ADK events and app
state, LangGraph threads, checkpoints and writes). No user data, no memories, no erasure or
access requests: those are the Compliance group's (docs/COMPLIANCE.md)."""

from django.db import migrations

from userdata_app.migrations._grants import SUPPORT_GROUP, grant_to_group

PERMISSIONS = {
    "sessions_app": [
        "view_session",
        "view_message",
        "view_round",
        "view_checkpoint",
        "view_agenttransition",
        "view_adkevent",
        "view_adkappstate",
        "view_langgraphthread",
        "view_langgraphcheckpoint",
        "view_langgraphwrite",
    ],
}


def create_support_group(apps, schema_editor):
    grant_to_group(apps, SUPPORT_GROUP, PERMISSIONS)


def remove_support_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=SUPPORT_GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("userdata_app", "0012_user_data_verbose_name"),
        ("sessions_app", "0015_framework_verbose_names"),
    ]

    operations = [migrations.RunPython(create_support_group, remove_support_group)]
