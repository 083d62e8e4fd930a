"""What a hold covers (docs/COMPLIANCE.md, *Legal holds*): everything that reaches a held tenant,
person or session by the map's ``via`` chain (``agentstate.subject_data.rows_held``) stays, on
every delete path. The paths are enumerated, not listed by hand: the API's destructive routes
(tests/holds/test_api.py classifies every write route; every DELETE route of the URL
configuration must be among them), every registered admin's delete view and actions, and every
management command of the project (a command that deletes runs here; the others say why not).
Each kind of hold is placed over one person's data in every declared category, each path runs,
and nothing the hold covers may be gone or changed. A few paths run in the quick loop; the whole
cross product is slow."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.management import call_command, get_commands
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from agentstate import subject_data
from agentstate.holds import services as holds
from agentstate.tenancy.models import Tenant
from sessions_app import services as session_services
from sessions_app import working_state
from sessions_app.models import Message, Session
from tests.hardening.stored import stored_rows
from tests.holds.test_api import DESTRUCTIVE, _send, _write_routes
from tests.subjects import held as rows_of
from userdata_app.erasure.registry import subject_hash
from userdata_app.memory.models import MemoryItem
from userdata_app.models import ErasedSubject

pytestmark = pytest.mark.django_db
OLD = timezone.now() - timedelta(days=400)
HOLDS = ("tenant", "person", "session a1", "session s1")


def _place(tenant, hold: str):
    where: dict[str, Any] = {"tenant": {}, "person": {"user_id": "u1"}}.get(hold, {})
    if hold.startswith("session"):
        session = Session.objects.get(tenant=tenant, user_id="u1", session_id=hold.split()[1])
        where = {"user_id": "u1", "session_pk": session.pk}
    return holds.legal_hold_place(tenant=tenant, reference="CASE-1", reason="r", **where)


def _covered_rows(d: subject_data.SubjectData, tenant, hold: str, session: Session | None):
    """The declared model's rows the hold covers, by the map's chain (not by the rule under test);
    ``session`` is the held session of a session hold."""
    rows = d.model._default_manager.all()
    if hold == "tenant":
        return rows.filter(**{f"{d.via}__tenant" if d.via else "tenant": tenant})
    if hold == "person":
        return subject_data.subject_rows(d, tenant=tenant, user_id="u1")
    assert session is not None, "a session hold covers its session"
    if d.via:
        return rows.filter(**{d.via: session})
    if d.hangs_off:
        return rows.filter(**{d.hangs_off: session.pk})
    return rows.filter(pk=session.pk) if d.model is Session else rows.none()


def kept(tenant, hold: str) -> dict[str, Any]:
    """Every row the hold covers, as stored, per declared model (read in one statement on
    PostgreSQL: per-model reads were a quarter of the cross product's time); and the covered
    sessions' working state (kept by its store, not its table)."""
    session = None
    if hold.startswith("session"):
        session = Session.objects.get(tenant=tenant, user_id="u1", session_id=hold.split()[1])
    tables = [d for d in subject_data.declared() if d.count_roots is None]
    found = stored_rows(_covered_rows(d, tenant, hold, session) for d in tables)
    snapshot: dict[str, Any] = {
        d.model._meta.label: {row[d.model._meta.pk.attname]: row for row in rows}
        for d, rows in zip(tables, found, strict=True)
    }
    store = working_state.get_store()
    for d in subject_data.declared():
        if d.count_roots is not None:
            snapshot[d.model._meta.label] = {pk: store.get(pk) for pk in snapshot[Session._meta.label]}
    return snapshot


# --- The delete paths ------------------------------------------------------------------------------


class Path:
    """A delete path: ``prepare`` sets the data up for it (ages, registry entries), then the hold's
    rows are snapshotted, then ``run`` deletes what it may."""

    def __init__(self, run: Callable[..., None], prepare: Callable[..., None] = lambda **kw: None) -> None:
        self.run, self.prepare = run, prepare


def _api_path(route: tuple[str, str]) -> Path:
    method, (path, body) = route[1], DESTRUCTIVE[route]

    def run(*, api, **kw):
        assert _send(api, method, path, body).status_code in (200, 204, 404, 409)

    return Path(run)


def _superuser_request():
    request = RequestFactory().get("/admin/")
    request.user = User(is_superuser=True, is_staff=True, is_active=True)
    return request


def _admin_delete(model) -> Path:
    """Every row of the model through its delete page, then the rest by ``delete_selected``."""

    def run(*, staff, actor, **kw):
        info = model._meta.app_label, model._meta.model_name
        rows = model._default_manager.exclude(pk=actor.pk) if model is User else model._default_manager.all()
        pks = [str(pk) for pk in rows.values_list("pk", flat=True)]
        assert pks, f"nothing of {model._meta.label} to delete: the scenario needs a row"
        page = staff.post(reverse("admin:{}_{}_delete".format(*info), args=[pks[0]]), {"post": "yes"})
        assert page.status_code in (200, 302), page.status_code
        changelist = reverse("admin:{}_{}_changelist".format(*info))
        chosen = staff.post(changelist, {"action": "delete_selected", "_selected_action": pks, "post": "yes"})
        assert chosen.status_code in (200, 302), chosen.status_code

    return Path(run)


def _admin_action(model, action: str) -> Path:
    """The action on every row of the model, confirmed (an erasure withholding what is held)."""

    def run(*, staff, **kw):
        info = model._meta.app_label, model._meta.model_name
        pks = [str(pk) for pk in model._default_manager.values_list("pk", flat=True)]
        assert pks, f"nothing of {model._meta.label} to act on: the scenario needs a row"
        answer = staff.post(
            reverse("admin:{}_{}_changelist".format(*info)),
            {"action": action, "_selected_action": pks, "post": "yes", "withhold_held": "yes"},
        )
        assert answer.status_code in (200, 302), answer.status_code

    return Path(run)


def _command(*args: str) -> Callable[..., None]:
    def run(**kw):
        call_command(*args, stdout=io.StringIO(), stderr=io.StringIO())

    return run


def _aged(**kw) -> None:
    """Everything old enough for every retention rule, every session ended, every memory expired."""
    session_services.retention_policy_save(
        tenant=kw["tenant"],
        delete_ended_after_days=1,
        end_idle_after_days=1,
        keep_latest_rounds=1,
        keep_latest_checkpoints=1,
        drop_messages_after_days=1,
    )
    Session.objects.update(updated_at=OLD, ended_at=OLD)
    Message.objects.update(created_at=OLD)
    MemoryItem.objects.update(expires_at=OLD)


def _registered_erased(**kw) -> None:
    """u1 in the erased-subject registry, erased after everything they have was written."""
    key_id, digest = subject_hash(tenant_slug="acme", user_id="u1")
    erased_at = timezone.now() + timedelta(days=1)
    ErasedSubject.objects.create(
        subject_hash=digest, key_id=key_id, scope="everything", erased_at=erased_at, grace_until=erased_at
    )


def _erase_user(**kw) -> None:
    """Both scopes; the storage clean-up runs once, not retried for 10 s: the test's transaction
    never commits, so the statistics refresh finds the held tables busy every time."""
    for scope in ("user_data", "everything"):
        args = ("--scope", scope, "--yes", "--withhold-held", "--storage-timeout", "0")
        _command("erase_user", "--subject", "acme:u1", *args)()


def _export_import(*, tmp_path, **kw) -> None:
    """The tenant exported and imported again over itself: an import replaces nothing it finds."""
    out = io.StringIO()
    call_command("export_tenant", tenant="acme", stdout=out)
    path = tmp_path / "acme.jsonl"
    path.write_text(out.getvalue())
    _command("import_tenant", str(path), "--tenant", "acme")()


# Every management command of the project: how it runs as a delete path, or why it is none.
COMMANDS: dict[str, Path | str] = {
    "apply_retention": Path(_command("apply_retention"), prepare=_aged),
    "expire_memories": Path(_command("expire_memories"), prepare=_aged),
    "purge_working_state": Path(_command("purge_working_state")),
    "erase_user": Path(_erase_user),
    "reapply_erasures": Path(_command("reapply_erasures"), prepare=_registered_erased),
    "import_tenant": Path(_export_import),
    "erasure_storage_cleanup": Path(_command("erasure_storage_cleanup")),
    "remove_artifact_files": Path(_command("remove_artifact_files")),
    "prune_access_log": Path(_command("prune_access_log")),
    "export_tenant": "reads a tenant into a file",
    "export_user": "reads a person into a file",
    "verify_access_log": "reads the access log",
    "create_api_key": "adds a key",
    "quickstart": "creates a demo tenant and key on an empty database",
    "migrate": "Django's migrate, with the database's own settings",
    "import_sessions": "imports a framework's store: a session the tenant holds is left as it is",
    "load_demo_data": "writes the demo tenants through the services",
}
OUR_APPS = ("agentstate", "agentstate_site", "backends", "sessions_app", "userdata_app")


def _our_commands() -> set[str]:
    return {name for name, app in get_commands().items() if app.split(".")[0] in OUR_APPS}


def delete_paths() -> dict[str, Path]:
    """Every delete path, by a readable id."""
    paths: dict[str, Path] = {f"api {name} {method}": _api_path((name, method)) for name, method in DESTRUCTIVE}
    request = _superuser_request()
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label
        if model_admin.has_delete_permission(request):
            paths[f"admin {label} delete"] = _admin_delete(model)
        for action in model_admin.get_actions(request):
            if action != "delete_selected":
                paths[f"admin {label} {action}"] = _admin_action(model, action)
    paths |= {f"command {name}": path for name, path in COMMANDS.items() if isinstance(path, Path)}
    return paths


PATHS = delete_paths()
# The quick loop's few: each kind of hold, an API delete, the admin's and the shell's erasure.
QUICK = {
    ("api user-datum delete", "person"),
    ("api working-state delete", "tenant"),
    ("api adk-artifact-list delete", "session a1"),
    ("command erase_user", "session a1"),
    ("admin userdata_app.ErasureRequest execute_erasure", "person"),
}


def test_the_scenario_holds_every_category(scenario_case):
    """Checked once, not in every case of the cross product (tests/holds/conftest.py builds it)."""
    empty = {c for c, n in rows_of(tenant=scenario_case.tenant, user_id="u1").items() if not n}
    assert not empty, f"the scenario holds nothing of {sorted(empty)}: add it"


def test_every_delete_path_is_exercised():
    """A DELETE route outside the destructive table, or a command nobody classified, fails here."""
    deletes = {route for route in _write_routes() if route[1] == "delete"}
    assert deletes - DESTRUCTIVE.keys() == set(), "a DELETE route the hold test does not run"
    assert _our_commands() ^ COMMANDS.keys() == set(), "classify the new (or drop the gone) management commands"
    assert all(name in PATHS and hold in HOLDS for name, hold in QUICK)


@pytest.mark.parametrize(
    "path, hold",
    [
        pytest.param(path, hold, marks=[] if (path, hold) in QUICK else [pytest.mark.slow, pytest.mark.crosscheck])
        for path in PATHS
        for hold in HOLDS
    ],
)
def test_no_delete_path_removes_what_a_hold_covers(scenario_case, client, tmp_path, hold, path):
    """Every case starts from the same world (tests/holds/conftest.py: built once, each case rolled
    back to it, its working state and files restored)."""
    tenant, admin_user = scenario_case.tenant, scenario_case.admin
    client.force_login(admin_user)
    context = {"api": scenario_case.api, "tenant": tenant, "staff": client, "actor": admin_user, "tmp_path": tmp_path}
    PATHS[path].prepare(**context)
    _place(tenant, hold)
    before = kept(tenant, hold)
    assert any(before.values())

    PATHS[path].run(**context)

    tenant = Tenant.objects.get(pk=tenant.pk)
    after = kept(tenant, hold)
    for label, rows in before.items():
        gone = rows.keys() - after[label].keys()
        assert not gone, f"{path} removed {len(gone)} held {label} rows"
        changed = [pk for pk in rows if after[label][pk] != rows[pk]]
        assert not changed, f"{path} changed held {label} rows: {changed}"
