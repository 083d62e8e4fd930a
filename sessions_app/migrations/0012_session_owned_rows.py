"""Every row of a session is ``SessionOwned`` (sessions_app.models). Its session key leaves Session
without a reverse accessor (Python only, no SQL), and its tenant, a copy of the session's that the
session's own key already proves, carries no database constraint, as messages' and rounds' have
since 0009. Only constraints go: no row changes (SQLite rebuilds each table to drop one)."""

import django.db.models.deletion
from django.db import migrations, models


def session_key() -> models.ForeignKey:
    return models.ForeignKey(
        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="sessions_app.session"
    )


def tenant_copy() -> models.ForeignKey:
    return models.ForeignKey(
        db_constraint=False,
        db_index=False,
        on_delete=django.db.models.deletion.CASCADE,
        related_name="+",
        to="tenancy.tenant",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0011_adk_event_id_index"),
        ("tenancy", "0002_api_keys"),
    ]

    operations = [
        *(
            migrations.AlterField(model_name=model, name="session", field=session_key())
            for model in ("message", "round", "checkpoint", "agenttransition", "adkevent")
        ),
        *(
            migrations.AlterField(model_name=model, name="tenant", field=tenant_copy())
            for model in (
                "messagepop",
                "checkpoint",
                "agenttransition",
                "langgraphthread",
                "langgraphcheckpoint",
                "langgraphwrite",
                "adkevent",
            )
        ),
    ]
