"""The Compliance group reads and exports the access log and sets each tenant's policy."""

from django.db import migrations

from userdata_app.migrations._grants import grant_to_compliance, revoke_from_compliance

PERMISSIONS = {
    "access_log": [
        "view_accessentry",
        "export_accessentry",
        "view_accesspolicy",
        "add_accesspolicy",
        "change_accesspolicy",
    ]
}


def grant(apps, schema_editor):
    grant_to_compliance(apps, PERMISSIONS)


def revoke(apps, schema_editor):
    revoke_from_compliance(apps, PERMISSIONS)


class Migration(migrations.Migration):
    dependencies = [("access_log", "0001_initial"), ("userdata_app", "0010_memory_item")]

    operations = [migrations.RunPython(grant, revoke)]
