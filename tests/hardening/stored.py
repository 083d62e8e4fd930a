"""Everything agentstate stores, as plain data: compare before and after a refused request."""

from collections.abc import Iterable

from django.apps import apps
from django.db import connection
from django.db.models import QuerySet

from sessions_app import working_state
from sessions_app.models import Session

APPS = ("tenancy", "sessions_app", "userdata_app")


def stored_everything() -> dict:
    """Every row of the apps' tables (each row its fields' values by attname, in pk order), and
    the working state of every session (Redis included)."""
    models = [model for label in APPS for model in apps.get_app_config(label).get_models()]
    tables = stored_rows(model._default_manager.all() for model in models)
    rows: dict = dict(zip((model._meta.label for model in models), tables, strict=True))
    store = working_state.get_store()
    pk = Session._meta.pk.attname
    rows["working_state"] = {row[pk]: store.get(row[pk]) for row in rows[Session._meta.label]}
    return rows


def stored_rows(querysets: Iterable[QuerySet]) -> list[list[dict]]:
    """Each queryset's rows (its fields' values by attname, in pk order). On PostgreSQL all in one
    round trip, as JSON: the cross products take a snapshot before and after every request, and one
    query per table (36 round trips) was most of their time (in process, SQLite's per-table reads
    cost nothing alike)."""
    querysets = list(querysets)
    if connection.vendor != "postgresql":
        return [list(qs.order_by("pk").values()) for qs in querysets]
    quote = connection.ops.quote_name
    tables: list[str] = []
    params: list = []
    for qs in querysets:
        if qs.query.is_empty():
            tables.append("'[]'::json")
            continue
        model = qs.model
        fields = ", ".join(f"{quote(f.column)} AS {quote(f.attname)}" for f in model._meta.concrete_fields)
        table, pk, order = quote(model._meta.db_table), quote(model._meta.pk.column), quote(model._meta.pk.attname)
        chosen, chosen_params = qs.order_by().values("pk").query.sql_with_params()
        rows = f"SELECT {fields} FROM {table} WHERE {pk} IN ({chosen})"  # noqa: S608 (names from the models)
        tables.append(f"(SELECT coalesce(json_agg(r ORDER BY r.{order}), '[]') FROM ({rows}) r)")  # noqa: S608
        params.extend(chosen_params)
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(tables), params)
        return list(cursor.fetchone())
