"""CHANGELOG.md tells an operator what changed between two versions: it has a section for the
version pyproject.toml gives, and every migration added after that version's baseline is named in
it (with its upgrade note: what to run, in which order, whether an older client keeps working)."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHANGELOG = ROOT / "CHANGELOG.md"

# The migrations version 0.1.0 shipped with, which its section sums up. A migration not listed here
# must be named in CHANGELOG.md, by its path, in the upgrade notes of the version that adds it.
BASELINE_0_1_0 = frozenset(
    {
        "agentstate/holds/migrations/0001_legal_hold.py",
        "agentstate/tenancy/migrations/0001_initial.py",
        "agentstate/tenancy/migrations/0002_api_keys.py",
        "sessions_app/migrations/0001_initial.py",
        "sessions_app/migrations/0002_session_admin_search_indexes.py",
        "sessions_app/migrations/0003_session_app_name_framework.py",
        "sessions_app/migrations/0004_langgraph_checkpointer.py",
        "sessions_app/migrations/0005_history_edits_and_forks.py",
        "sessions_app/migrations/0006_adk_sessions_events_app_state.py",
        "sessions_app/migrations/0007_retention.py",
        "sessions_app/migrations/0008_session_admin_filter_indexes.py",
        "sessions_app/migrations/0009_tenant_copies_unconstrained.py",
        "sessions_app/migrations/0010_session_ended_by_retention.py",
        "sessions_app/migrations/0011_adk_event_id_index.py",
        "sessions_app/migrations/0012_session_owned_rows.py",
        "sessions_app/migrations/0013_message_search.py",
        "sessions_app/migrations/0014_langgraph_views_rendered_on_read.py",
        "sessions_app/migrations/0015_framework_verbose_names.py",
        "sessions_app/migrations/0016_run_usage.py",
        "sessions_app/migrations/0017_retention_run_held.py",
        "sessions_app/migrations/0018_message_user_newest.py",
        "sessions_app/migrations/0019_message_search_owner.py",
        "userdata_app/access_log/migrations/0001_initial.py",
        "userdata_app/access_log/migrations/0002_compliance_grants.py",
        "userdata_app/migrations/0001_initial.py",
        "userdata_app/migrations/0002_erasure_workflow.py",
        "userdata_app/migrations/0003_compliance_group.py",
        "userdata_app/migrations/0004_user_datum_admin_search_indexes.py",
        "userdata_app/migrations/0005_erasure_storage_pending.py",
        "userdata_app/migrations/0006_adk_user_state.py",
        "userdata_app/migrations/0007_erasure_review_permission.py",
        "userdata_app/migrations/0008_compliance_views_framework_records.py",
        "userdata_app/migrations/0009_erasure_storage_pending_owed.py",
        "userdata_app/migrations/0010_memory_item.py",
        "userdata_app/migrations/0011_memory_item_search.py",
        "userdata_app/migrations/0012_user_data_verbose_name.py",
        "userdata_app/migrations/0013_support_group.py",
        "userdata_app/migrations/0014_access_requests.py",
        "userdata_app/migrations/0015_artifact.py",
        "userdata_app/migrations/0016_legal_hold_permissions.py",
        "userdata_app/migrations/0017_erasure_receipt_withheld.py",
    }
)

PACKAGES = ("agentstate", "sessions_app", "userdata_app")


def migration_files() -> list[str]:
    """Every migration module of the project's apps, as a path from the repository root."""
    return sorted(
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("migrations/[0-9][0-9][0-9][0-9]_*.py")
    )


def unmentioned(migrations: list[str], changelog: str) -> list[str]:
    return [path for path in migrations if path not in BASELINE_0_1_0 and path not in changelog]


def test_every_migration_after_the_baseline_has_an_upgrade_note():
    missing = unmentioned(migration_files(), CHANGELOG.read_text(encoding="utf-8"))
    assert not missing, (
        "Add an upgrade note to CHANGELOG.md's [Unreleased] section naming each of these files (what to "
        "run, in which order, whether an older client keeps working):\n" + "\n".join(missing)
    )


def test_a_new_migration_is_caught_and_named():
    new = "sessions_app/migrations/0099_something.py"
    assert unmentioned([*BASELINE_0_1_0, new], "## [Unreleased]\n") == [new]
    assert unmentioned([*BASELINE_0_1_0, new], f"- **`{new}`** adds a column.\n") == []


def test_the_baseline_is_on_disk_and_the_changelog_has_this_versions_section():
    assert set(BASELINE_0_1_0) <= set(migration_files())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    text = CHANGELOG.read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M), version
    assert "## [Unreleased]" in text
