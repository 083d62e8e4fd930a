"""An erasure receipt says what legal holds withheld from it, and why."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("userdata_app", "0016_legal_hold_permissions"),
    ]

    operations = [
        migrations.AddField(
            model_name="erasurereceipt",
            name="withheld",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text='Kept by legal holds: [{"tenant", "hmac_sha256", "key_id", "holds": [reference], "whole", "counts"}]',
            ),
        ),
    ]
