"""The SQLite test database copied from a template (tests/sqlite_template.py) is rebuilt whenever
what migrating makes can change: a migration's own file, or the project code it imports; the
templates no run uses any more go."""

import os
import time
from pathlib import Path

from tests import sqlite_template
from tests.sqlite_template import ROOT, template_sources


def test_the_template_is_keyed_on_the_migrations_and_the_code_they_import():
    sources = {path.relative_to(ROOT).as_posix() for path in template_sources() if path.is_relative_to(ROOT)}
    assert {
        "sessions_app/migrations/0013_message_search.py",
        "userdata_app/migrations/_grants.py",
        "agentstate/search/schema.py",  # the full-text index's SQL, which 0013 imports from agentstate.search
    } <= sources
    assert any(Path(path).name == "0001_initial.py" and "contrib/auth" in str(path) for path in template_sources())


def test_a_build_removes_the_templates_no_run_used_for_a_day(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_template, "DIRECTORY", tmp_path)
    kept, recent, stale = (tmp_path / f"{name}.sqlite3" for name in ("kept", "recent", "stale"))
    for template in (kept, recent, stale):
        template.write_bytes(b"")
        template.with_suffix(".lock").write_bytes(b"")
    day_and_more = time.time() - sqlite_template.UNUSED_SECONDS - 60
    os.utime(stale, (day_and_more, day_and_more))
    os.utime(kept, (day_and_more, day_and_more))  # the one just built is never removed

    sqlite_template._remove_unused(kept)

    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "kept.lock",
        "kept.sqlite3",
        "recent.lock",
        "recent.sqlite3",
    ]
