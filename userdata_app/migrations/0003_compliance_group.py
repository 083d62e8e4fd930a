"""The "Compliance" group: staff in it may execute erasures and export a subject's data."""

from django.db import migrations

from userdata_app.migrations._grants import COMPLIANCE_GROUP, grant_to_compliance

PERMISSIONS = {
    "userdata_app": [
        "execute_erasure",
        "export_subject_data",
        "add_erasurerequest",
        "change_erasurerequest",
        "view_erasurerequest",
        "add_erasuresubject",
        "change_erasuresubject",
        "delete_erasuresubject",
        "view_erasuresubject",
        "view_erasureevent",
        "view_erasurereceipt",
        "view_erasedsubject",
        "view_userdatum",
    ],
    "sessions_app": ["view_session", "view_message", "view_round", "view_checkpoint", "view_agenttransition"],
}


def create_compliance_group(apps, schema_editor):
    grant_to_compliance(apps, PERMISSIONS)


def remove_compliance_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=COMPLIANCE_GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("userdata_app", "0002_erasure_workflow"),
        ("sessions_app", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_compliance_group, remove_compliance_group)]
