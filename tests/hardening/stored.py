"""Everything agentstate stores, as plain data: compare before and after a refused request."""

from django.apps import apps

from sessions_app import working_state
from sessions_app.models import Session

APPS = ("tenancy", "sessions_app", "userdata_app")


def stored_everything() -> dict:
    """Every row of the apps' tables, and the working state of every session (Redis included)."""
    rows = {
        model._meta.label: list(model.objects.order_by("pk").values())
        for label in APPS
        for model in apps.get_app_config(label).get_models()
    }
    store = working_state.get_store()
    rows["working_state"] = {pk: store.get(pk) for pk in Session.objects.values_list("pk", flat=True)}
    return rows
