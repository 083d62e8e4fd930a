"""Everything agentstate stores, as plain data: compare before and after a refused request."""

from django.apps import apps
from django.db import connection

from sessions_app import working_state
from sessions_app.models import Session

APPS = ("tenancy", "sessions_app", "userdata_app")


def stored_everything() -> dict:
    """Every row of the apps' tables (each row its fields' values by attname, in pk order), and
    the working state of every session (Redis included)."""
    rows: dict
    models = [model for label in APPS for model in apps.get_app_config(label).get_models()]
    if connection.vendor == "postgresql":
        rows = dict(zip((model._meta.label for model in models), _tables_in_one_statement(models), strict=True))
    else:
        rows = {model._meta.label: list(model._default_manager.order_by("pk").values()) for model in models}
    store = working_state.get_store()
    pk = Session._meta.pk.attname
    rows["working_state"] = {row[pk]: store.get(row[pk]) for row in rows[Session._meta.label]}
    return rows


def _tables_in_one_statement(models: list) -> list[list[dict]]:
    """Each table's rows as JSON, all in one round trip: the cross products take a snapshot before
    and after every request, and one query per table (36 round trips) was most of their time on
    PostgreSQL (in process, SQLite's per-table reads cost nothing alike)."""
    quote = connection.ops.quote_name
    tables = []
    for model in models:
        fields = ", ".join(f"{quote(f.column)} AS {quote(f.attname)}" for f in model._meta.concrete_fields)
        table, order = quote(model._meta.db_table), quote(model._meta.pk.attname)
        rows = f"SELECT {fields} FROM {table}"  # noqa: S608 (names from the models)
        tables.append(f"(SELECT coalesce(json_agg(r ORDER BY r.{order}), '[]') FROM ({rows}) r)")  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(tables))
        return list(cursor.fetchone())
