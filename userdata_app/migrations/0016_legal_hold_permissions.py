"""The Compliance group places and releases legal holds (agentstate.holds) and sees them."""

from django.db import migrations

from userdata_app.migrations._grants import grant_to_compliance, revoke_from_compliance

PERMISSIONS = {"holds": ["place_legalhold", "release_legalhold", "view_legalhold"]}


def grant_holds(apps, schema_editor):
    grant_to_compliance(apps, PERMISSIONS)


def revoke_holds(apps, schema_editor):
    revoke_from_compliance(apps, PERMISSIONS)


class Migration(migrations.Migration):
    dependencies = [
        ("holds", "0001_legal_hold"),
        ("userdata_app", "0015_artifact"),
    ]

    operations = [migrations.RunPython(grant_holds, revoke_holds)]
