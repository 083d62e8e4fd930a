"""A transactional test's reset (``transaction=True``, live servers): the database Django's flush
leaves, made by emptying only the tables the test left rows in.

Django's flush empties every table, then runs post_migrate's handlers again to make the content
types and permissions anew: on PostgreSQL most of a transactional test's own time went there (a
TRUNCATE of all ~50 tables, each given new files, and the handlers' queries). The first reset in a
process is Django's flush, and what it leaves is kept as the baseline (rows in the two tables
post_migrate fills); every later reset reads which tables have rows (one statement) and the
baseline tables' rows, deletes the rows of the tables that have some outside the baseline (in one
transaction, the foreign keys checked at its end), and is Django's flush again when a baseline
table's rows differ. Sequences go on counting, as with Django's flush. A test case with
available_apps or serialized_rollback gets Django's own teardown.
"""

import threading
import time

from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.core.signals import request_finished, request_started
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
    """Leaves the database ``alias`` as Django's flush would, the content types' cache emptied as
    post_migrate's handler empties it (a test may switch to a database of other ids)."""
    if _emptied_fast(alias):
        ContentType.objects.clear_cache()
        return
    # Django's flush, as its teardown runs it for a test case with neither available_apps nor
    # serialized_rollback.
    call_command("flush", verbosity=0, interactive=False, database=alias, reset_sequences=False)
    connection = connections[alias]
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    _baselines[alias] = _rows(connection, _filled(connection, tables))


# The threads answering a request of the live server (session-wide), which share the test's
# database connection: a request a test left running (a client's call still on its way when the
# test ended) would write on into the next test's database.
_answering: set[threading.Thread] = set()
ANSWERED_SECONDS = 5  # the wait for them, after which the reset goes ahead (as it did before)


def _answer_started(**_: object) -> None:
    if "process_request_thread" in threading.current_thread().name:  # socketserver's, one a connection
        _answering.add(threading.current_thread())


def _answer_finished(**_: object) -> None:
    _answering.discard(threading.current_thread())


def _requests_answered() -> None:
    """Waits until no live server thread is in the middle of a request."""
    deadline = time.monotonic() + ANSWERED_SECONDS
    while any(thread.is_alive() for thread in list(_answering)) and time.monotonic() < deadline:
        time.sleep(0.01)
    _answering.clear()


def fixture_teardown(self: TransactionTestCase) -> None:
    """TransactionTestCase._fixture_teardown (Django's own for available_apps or serialized_rollback),
    once the requests a live server was answering are answered."""
    _requests_answered()
    if self.available_apps is not None or self.serialized_rollback:
        _django_teardown(self)
        return
    for alias in self._databases_names(include_mirrors=False):
        reset(alias)


def install() -> None:
    """Every transactional test case (pytest-django's included) resets this way."""
    TransactionTestCase._fixture_teardown = fixture_teardown
    request_started.connect(_answer_started)
    request_finished.connect(_answer_finished)
