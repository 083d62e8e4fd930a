"""Only the Compliance group decides on erasure requests (docs/COMPLIANCE.md): a permission of
its own for verify, extend, hold, release and reject, given to that group."""

from django.db import migrations

COMPLIANCE_GROUP = "Compliance"
PERMISSIONS = {"userdata_app": ["review_erasure"]}


def grant_review(apps, schema_editor):
    # Permissions are created after all migrations (post_migrate): create this one first, or a
    # fresh database has none to grant.
    from django.contrib.auth.management import create_permissions

    app_config = apps.get_app_config("userdata_app")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=COMPLIANCE_GROUP)
    group.permissions.add(
        *Permission.objects.filter(content_type__app_label="userdata_app", codename__in=PERMISSIONS["userdata_app"])
    )


def revoke_review(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.filter(content_type__app_label="userdata_app", codename__in=PERMISSIONS["userdata_app"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("userdata_app", "0006_adk_user_state"),
        ("userdata_app", "0003_compliance_group"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="erasurerequest",
            options={
                "permissions": [
                    ("review_erasure", "Can verify, extend, hold, release and reject erasure requests"),
                    ("execute_erasure", "Can execute erasure requests"),
                    ("export_subject_data", "Can export everything held about a subject"),
                ]
            },
        ),
        migrations.RunPython(grant_review, revoke_review),
    ]
