"""Long jobs' own database timeouts (docs/OPERATIONS.md, "Long jobs"): requests run under the
short ones every connection gets (settings, "Bounded waits"); a job's transactions get longer ones.

They are set with ``SET LOCAL`` at each transaction's first statement, never for the session: behind
PgBouncer in transaction pooling a session setting would stay on a server connection that the next
client, a request, then borrows. Statements a job runs outside a transaction keep the request bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg.pq import TransactionStatus

_JOB_TIMEOUTS_SQL = "SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true)"


@contextmanager
def job_timeouts(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Within: every transaction on ``using`` (PostgreSQL) runs under ``DATABASE_JOB_STATEMENT_TIMEOUT``
    and ``DATABASE_JOB_LOCK_TIMEOUT``; a ``SET LOCAL`` of the job's own (a shorter lock wait) still
    wins, being later."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        yield
        return
    values = [
        f"{round(settings.DATABASE_JOB_STATEMENT_TIMEOUT * 1000)}",
        f"{round(settings.DATABASE_JOB_LOCK_TIMEOUT * 1000)}",
    ]

    def first_in_a_transaction(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict) -> Any:
        # IDLE inside an atomic block: nothing sent since BEGIN, so this is the transaction's first statement.
        # Raw: no ORM form (set_config of a job's statement and lock timeouts)
        if connection.in_atomic_block and connection.connection.info.transaction_status == TransactionStatus.IDLE:
            context["cursor"].cursor.execute(_JOB_TIMEOUTS_SQL, values)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(first_in_a_transaction):
        yield


class JobCommand(BaseCommand):
    """A management command that is a long job: it runs under ``job_timeouts`` on its database."""

    def execute(self, *args: Any, **options: Any) -> Any:
        with job_timeouts(options.get("database") or DEFAULT_DB_ALIAS):
            return super().execute(*args, **options)
