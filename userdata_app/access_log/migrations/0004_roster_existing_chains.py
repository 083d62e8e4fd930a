"""Chains begun before the roster of chains existed are recorded on it, so that
``verify_access_log`` does not report them as chains the roster never recorded.

It calls the chain's own code (the entries' MACs are computed as every entry's are), not a frozen
copy: the access log's tables are as ``0003`` left them when it runs.
"""

from django.db import migrations


def roster_existing_chains(apps, schema_editor):
    from userdata_app.access_log.chain import chains_roster_unrecorded

    chains_roster_unrecorded()


class Migration(migrations.Migration):
    dependencies = [
        ("access_log", "0003_accessentry_action_chain"),
    ]

    operations = [
        migrations.RunPython(roster_existing_chains, migrations.RunPython.noop, elidable=True),
    ]
