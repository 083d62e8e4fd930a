"""Django's health check before a request's first query (CONN_HEALTH_CHECKS) asks the server only
when the connection's socket says something happened to it (agentstate.postgresql.base): a kept,
quiet connection costs no round trip, and one the server ended is still replaced before the request
uses it."""

from __future__ import annotations

import select
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg.pq import Trace

pytestmark = pytest.mark.django_db


@pytest.fixture
def kept(postgres_only) -> Iterator:
    """A connection of the app's own, kept between requests (CONN_MAX_AGE) and health-checked."""
    database = connections.create_connection(DEFAULT_DB_ALIAS)
    database.settings_dict.update(CONN_MAX_AGE=60, CONN_HEALTH_CHECKS=True)
    database.ensure_connection()
    yield database
    database.close()


def _request(database) -> int:
    """What Django does around a request: the connection checked at its start, then its first
    query (here: which backend answered)."""
    database.close_if_unusable_or_obsolete()
    with database.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    return pid


@contextmanager
def _traced(database) -> Iterator[list[str]]:
    """The protocol messages the connection sends meanwhile, as libpq traces them."""
    sent: list[str] = []
    with tempfile.TemporaryFile(mode="w+") as trace:
        database.connection.pgconn.trace(trace.fileno())
        database.connection.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)
        try:
            yield sent
        finally:
            database.connection.pgconn.untrace()
            trace.seek(0)
            sent.extend(line for line in trace.read().splitlines() if line.startswith("F"))


def test_a_request_on_a_quiet_kept_connection_asks_nothing_before_its_own_query(kept):
    _request(kept)
    with _traced(kept) as sent:
        for _ in range(3):
            _request(kept)
    queries = [line for line in sent if "Query" in line]
    assert len(queries) == 3 and all("pg_backend_pid" in line for line in queries), sent


def test_a_connection_the_server_ended_is_replaced_before_the_request_uses_it(kept):
    first = _request(kept)
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    deadline = time.monotonic() + 5
    while not select.select([kept.connection.fileno()], [], [], 0.1)[0]:  # its goodbye arrives
        assert time.monotonic() < deadline, "the ended backend's socket never became readable"
    second = _request(kept)
    assert second != first
