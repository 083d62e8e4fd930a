"""tools/sql_sites counts what it says: a planted raw statement, SQL text and vendor branch are
found, migrations and docstrings are not; a raw statement without its ``# Raw:`` line (the
benchmark and target it serves, or that the ORM has no form of it), in the core or a backend,
fails the suite."""

from pathlib import Path

from tools import sql_sites


def test_counts_planted_sql_and_vendor_branches(tmp_path: Path) -> None:
    package = tmp_path / "sessions_app"
    (package / "migrations").mkdir(parents=True)
    (package / "planted.py").write_text(
        '"""SELECT the rows FROM a docstring: prose, not a statement."""\n'
        "from django.db import connection\n"
        "def touch(pk):\n"
        '    if connection.vendor == "postgresql":\n'
        "        with connection.cursor() as cursor:\n"
        '            cursor.execute("UPDATE t SET n = n + 1 WHERE id = %s", [pk])\n'
    )
    (package / "migrations" / "0001_initial.py").write_text('RunSQL("DROP TABLE IF EXISTS t")\n')

    result = sql_sites.count(tmp_path)

    assert (result["sql_sites"], result["statements"], result["vendor_branches"]) == (1, 1, 1)
    assert {site["module"] for site in result["sites"]} == {"sessions_app.planted"}


def test_the_service_is_counted() -> None:
    """The repository's own packages are where the tool looks (a rename would count nothing)."""
    result = sql_sites.count()
    assert result["sql_sites"] and result["vendor_branches"]


def test_a_raw_site_without_its_justification_line_is_reported(tmp_path: Path) -> None:
    """A ``# Raw:`` line above the statement in its function justifies it; a framework backend's
    package is counted but not held to the rule; a Redis pipeline's ``execute()`` is not SQL."""
    core, backend = tmp_path / "sessions_app", tmp_path / "backends" / "langgraph" / "process"
    core.mkdir()
    backend.mkdir(parents=True)
    raw = '    with connection.cursor() as cursor:\n        cursor.execute("SELECT 1")\n'
    (core / "planted.py").write_text(
        "def justified(connection):\n    # Raw: benchmarks/http_load.py append p99 target\n"
        + raw
        + "def bare(connection):\n"
        + raw
        + "def pipeline(client):\n    return client.pipeline().execute()\n"
    )
    (backend / "planted.py").write_text("def bare(connection):\n" + raw)

    result = sql_sites.count(tmp_path)

    bare = [(s["module"], s["core"]) for s in result["sites"] if s["kind"] == "sql" and not s["justified"]]
    assert result["sql_sites"] == 3
    assert sorted(bare) == [("backends.langgraph.process.planted", False), ("sessions_app.planted", True)]
    assert (result["unjustified"], result["unjustified_core"]) == (2, 1)


def test_every_raw_site_says_why_it_is_raw() -> None:
    """Hand-written SQL, in the core and in every backend, only where a benchmark's target needs it
    or the ORM has no form of the statement, each saying which in a ``# Raw:`` line (``python -m
    tools.sql_sites`` lists them)."""
    result = sql_sites.count()
    bare = [f"{s['module']}:{s['line']}" for s in result["sites"] if s["kind"] == "sql" and not s["justified"]]
    assert not bare, "raw SQL without a '# Raw:' line above it: " + ", ".join(bare)
