"""Only the Compliance group decides on erasure requests (docs/COMPLIANCE.md): a permission of
its own for verify, extend, hold, release and reject, given to that group."""

from django.db import migrations

from userdata_app.migrations._grants import grant_to_compliance

PERMISSIONS = {"userdata_app": ["review_erasure"]}


def grant_review(apps, schema_editor):
    grant_to_compliance(apps, PERMISSIONS)


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
