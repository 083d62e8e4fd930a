"""Fixtures of the hold tests: the cross product's world (tests/holds/world.py's ``scenario``),
built once per module and worker instead of once per case."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings
from rest_framework.test import APIClient

from agentstate.tenancy.models import Tenant
from agentstate.tenancy.services import api_key_create, tenant_get_or_create
from sessions_app import working_state
from sessions_app.models import Session
from tests.holds.world import rows, scenario

FS = "django.core.files.storage.FileSystemStorage"


@dataclass
class Scenario:
    """The world as built, and what of it lives outside the database: the sessions' working state
    (in Redis when REDIS_URL is set) and the artifacts' files, which a rollback does not bring back."""

    tenant_pk: int
    admin_pk: int
    key: str
    files: Path
    working_state: dict[int, dict[str, Any]] = field(default_factory=dict)
    stored: dict[Path, bytes] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)

    def keep_outside(self) -> None:
        self.rows = rows()
        store = working_state.get_store()
        self.working_state = {pk: store.get(pk) for pk in Session.objects.values_list("pk", flat=True)}
        self.stored = {path: path.read_bytes() for path in self.files.rglob("*") if path.is_file()}

    def restore_outside(self) -> None:
        """The working state and files as built: what a case cleared is written again, what it
        added is removed (only what differs is written)."""
        store = working_state.get_store()
        for pk, data in self.working_state.items():
            if store.get(pk) != data:
                store.replace(pk, data) if data else store.clear(pk)
        for path in self.files.rglob("*"):
            if path.is_file() and path not in self.stored:
                path.unlink()
        for path, content in self.stored.items():
            if not path.is_file() or path.read_bytes() != content:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)


@dataclass
class Case:
    """One case's view of the world: fresh objects read in its own savepoint."""

    tenant: Tenant
    admin: User
    api: APIClient


@pytest.fixture(scope="module")
def _scenario(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Scenario]:
    """The world through the API once, in a transaction left open until the module's last test on
    this worker and then rolled back; each case runs in a savepoint inside it (pytest-django's
    ``db`` fixture), so whatever a case deletes or changes in the database comes back. The
    artifacts go to a directory of the module's own, so that restoring it touches nothing else."""
    files = tmp_path_factory.mktemp("held-artifacts")
    storages = {**settings.STORAGES, "artifacts": {"BACKEND": FS, "OPTIONS": {"location": str(files)}}}
    with override_settings(STORAGES=storages):
        with django_db_blocker.unblock():
            outer = transaction.atomic()
            outer.__enter__()
        try:
            with django_db_blocker.unblock():
                tenant = tenant_get_or_create(slug="acme")
                admin = User.objects.create_superuser("admin", "admin@example.invalid")
                key = api_key_create(tenant=tenant, name="agent")[1]
                scenario(_api(key), tenant, admin)
                built = Scenario(tenant_pk=tenant.pk, admin_pk=admin.pk, key=key, files=files)
                built.keep_outside()
            yield built
        finally:
            with django_db_blocker.unblock():
                transaction.set_rollback(True)
                outer.__exit__(None, None, None)


def _api(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


@pytest.fixture
def scenario_case(_scenario: Scenario, db) -> Case:
    """The world as built, for one case: the database's part by the savepoint, the rest restored."""
    _scenario.restore_outside()
    assert rows() == _scenario.rows, "a case starts from the world as built"
    tenant = Tenant.objects.get(pk=_scenario.tenant_pk)
    return Case(tenant=tenant, admin=User.objects.get(pk=_scenario.admin_pk), api=_api(_scenario.key))
