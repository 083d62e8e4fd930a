"""The SQLite test database copied from a template (tests/sqlite_template.py) is rebuilt whenever
what migrating makes can change: a migration's own file, or the project code it imports."""

from pathlib import Path

from tests.sqlite_template import ROOT, template_sources


def test_the_template_is_keyed_on_the_migrations_and_the_code_they_import():
    sources = {path.relative_to(ROOT).as_posix() for path in template_sources() if path.is_relative_to(ROOT)}
    assert {
        "sessions_app/migrations/0013_message_search.py",
        "userdata_app/migrations/_grants.py",
        "agentstate/search/schema.py",  # the full-text index's SQL, which 0013 imports from agentstate.search
    } <= sources
    assert any(Path(path).name == "0001_initial.py" and "contrib/auth" in str(path) for path in template_sources())
