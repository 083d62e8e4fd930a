"""tools/sql_sites counts what it says: a planted raw statement, SQL text and vendor branch are
found, migrations and docstrings are not."""

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
