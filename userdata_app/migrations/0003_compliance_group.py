"""The "Compliance" group: staff in it may execute erasures and export a subject's data."""

from django.db import migrations

COMPLIANCE_GROUP = "Compliance"
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
    # Permissions are normally created after all migrations (post_migrate); on a fresh database
    # they do not exist yet, so create them first.
    from django.contrib.auth.management import create_permissions

    for app_label in PERMISSIONS:
        app_config = apps.get_app_config(app_label)
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=COMPLIANCE_GROUP)
    for app_label, codenames in PERMISSIONS.items():
        group.permissions.add(*Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames))


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
