"""A transactional test's reset (``transaction=True``, live servers): the database Django's flush
leaves, made by emptying only the tables the test left rows in.

Django's flush empties every table, then runs post_migrate's handlers again to make the content
types and permissions anew: on PostgreSQL most of a transactional test's own time went there (a
TRUNCATE of all ~50 tables, each given new files, and the handlers' queries). The first reset in a
process is Django's flush, and what it leaves is kept as the baseline (rows in the two tables
post_migrate fills); every later reset reads which tables have rows (one statement) and the
baseline tables' rows, empties the tables with rows outside the baseline (with the tables referring
to them, as TRUNCATE ... CASCADE does), and is Django's flush again when a baseline table's rows
differ. Sequences go on counting, as with Django's flush. A test case with available_apps or
serialized_rollback gets Django's own teardown.
"""

from django.core.management import call_command
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import TransactionTestCase

_django_teardown = TransactionTestCase._fixture_teardown
# Per database alias: each baseline table's rows (a hash) as Django's flush left them.
_baselines: dict[str, dict[str, int]] = {}


def _filled(connection: BaseDatabaseWrapper, tables: list[str]) -> set[str]:
    """Which of ``tables`` have a row, in one statement."""
    qn = connection.ops.quote_name
    exists = " UNION ALL ".join(f"SELECT %s WHERE EXISTS (SELECT 1 FROM {qn(table)})" for table in tables)  # noqa: S608 (quoted model tables)
    with connection.cursor() as cursor:
        cursor.execute(exists, tables)
        return {row[0] for row in cursor.fetchall()}


def _rows(connection: BaseDatabaseWrapper, tables: set[str]) -> dict[str, int]:
    """A hash of each table's rows, in its first column's order."""
    qn = connection.ops.quote_name
    hashes = {}
    with connection.cursor() as cursor:
        for table in sorted(tables):
            cursor.execute(f"SELECT * FROM {qn(table)} ORDER BY 1")  # noqa: S608 (a quoted model table)
            hashes[table] = hash(repr(cursor.fetchall()))
    return hashes


def _emptied_fast(alias: str) -> bool:
    """Empties the tables with rows outside the baseline; False (nothing done) when there is no
    baseline yet or a baseline table's rows changed."""
    baseline = _baselines.get(alias)
    if baseline is None:
        return False
    connection = connections[alias]
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    if _rows(connection, set(baseline)) != baseline:
        return False
    # Again while rows are left: on SQLite (DELETE) a table's trigger may write a row in another
    # as its rows go (a person's memory generation).
    for _ in range(3):
        if not (filled := sorted(_filled(connection, tables) - set(baseline))):
            return True
        # In one transaction: the foreign keys are checked at its end (Django makes them deferred),
        # when every table that had rows is empty.
        qn = connection.ops.quote_name
        connection.ops.execute_sql_flush([f"DELETE FROM {qn(table)}" for table in filled])  # noqa: S608 (quoted model tables)
    return False


def reset(alias: str) -> None:
    """Leaves the database ``alias`` as Django's flush would."""
    if _emptied_fast(alias):
        return
    # Django's flush, as its teardown runs it for a test case with neither available_apps nor
    # serialized_rollback.
    call_command("flush", verbosity=0, interactive=False, database=alias, reset_sequences=False)
    connection = connections[alias]
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    _baselines[alias] = _rows(connection, _filled(connection, tables))


def fixture_teardown(self: TransactionTestCase) -> None:
    """TransactionTestCase._fixture_teardown (Django's own for available_apps or serialized_rollback)."""
    if self.available_apps is not None or self.serialized_rollback:
        _django_teardown(self)
        return
    for alias in self._databases_names(include_mirrors=False):
        reset(alias)


def install() -> None:
    """Every transactional test case (pytest-django's included) resets this way."""
    TransactionTestCase._fixture_teardown = fixture_teardown
