"""Data subjects as the platform knows them: a ``(tenant, user_id)`` pair, the lock that orders
writes about a subject with that subject's erasure, the guard every create path consults, and
the clean-up of copies a database keeps of erased rows outside its live tables.

The guard's rule (refuse writes that would recreate an erased subject's data) belongs to the
erasure workflow of the user-data app, which the session app must not import. The platform defines
the call here and the erasure workflow registers its rule from its ``AppConfig.ready``
(``write_guard_register``), so the layers stay one-way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db import OperationalError, connection, transaction

from agentstate.statements import execute_all

if TYPE_CHECKING:
    from agentstate.tenancy.models import Tenant

# What a write recreates: user-attributed data is erased by either scope, process state only by
# the scope "everything".
USER_DATA = "user_data"
PROCESS_STATE = "process_state"


class SubjectWriteGuard(Protocol):
    def __call__(
        self, *, tenant: Tenant, user_id: str, category: str, then: tuple[str, list[Any]] | None = None
    ) -> list[tuple[Any, ...]] | None: ...


def subject_canonical(*, tenant_slug: str, user_id: str) -> bytes:
    """The subject as bytes, the one form that locks and keyed hashes are computed over."""
    return json.dumps([tenant_slug, user_id], ensure_ascii=False, separators=(",", ":")).encode()


def subjects_lock(
    *, subjects: list[tuple[Tenant, str]], exclusive: bool, then: tuple[tuple[str, list[Any]], ...] = ()
) -> list[list[tuple[Any, ...]]]:
    """Inside a transaction, serialise an erasure with the writes that could recreate its
    subjects' data: writers share a subject's lock, the erasure holds it alone. A write then
    either commits before the erasure starts (and is erased with the rest) or checks the registry
    after the erasure committed (and is refused). A PostgreSQL advisory lock per subject, taken in
    key order and released at commit; SQLite's IMMEDIATE transactions already serialise writers.

    PostgreSQL: ``then``, statements (SQL and parameters), go in the locks' round trip and run once
    they are granted, each a statement of its own: READ COMMITTED gives each statement its own
    snapshot, so it sees what an erasure committed while the lock waited (in the lock's own
    statement it would not). Returns their rows, statement by statement ([] elsewhere)."""
    # Raw: benchmarks/frameworks.py per-call targets: the subjects' locks and the caller's read in one trip
    if connection.vendor != "postgresql":
        return []
    keys = sorted(
        int.from_bytes(
            hashlib.blake2b(subject_canonical(tenant_slug=t.slug, user_id=u), digest_size=8).digest(),
            "big",
            signed=True,
        )
        for t, u in subjects
    )
    function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    statements: list[tuple[str, list[Any]]] = [(f"SELECT {function}(%s)", [key]) for key in keys]
    return execute_all(*statements, *then)[len(keys) :]  # one round trip, the statements in order


_write_guard: SubjectWriteGuard | None = None


def write_guard_register(guard: SubjectWriteGuard) -> None:
    """The erasure workflow gives its rule at start (``AppConfig.ready``): the platform imports no app."""
    global _write_guard  # one guard per process, set once
    _write_guard = guard


def subject_write_check(
    *, tenant: Tenant, user_id: str, category: str, then: tuple[str, list[Any]] | None = None
) -> list[tuple[Any, ...]] | None:
    """Called inside the transaction of every write that creates ``category`` data for a subject;
    raises (``SubjectErased``) when the registered guard refuses it, and refuses every write when
    none is registered (a project without the erasure workflow must not write people's data).

    PostgreSQL: ``then``, the write itself (SQL and parameters), goes in the check's round trip,
    after it: it selects what it writes ``FROM allowed``, a relation of one row when the check
    passes and none when it refuses (``INSERT ... SELECT ... FROM allowed RETURNING ...``), so a
    refused write stores nothing; its rows are returned. Elsewhere ``then`` is not run (None)."""
    if _write_guard is None:
        raise ImproperlyConfigured("No subject write guard is registered (the user-data app is not installed).")
    return _write_guard(tenant=tenant, user_id=user_id, category=category, then=then)


# --- After an erasure commits: copies of erased rows outside the live tables --------------------


def statistics_refresh(*, tables: Iterable[str], lock_timeout_ms: int = 2000) -> list[str]:
    """PostgreSQL: re-sample the planner statistics of these tables. ``pg_stats`` keeps sampled
    column values (most common values, histogram bounds) of rows deleted since the last ANALYZE.
    ANALYZE leaves an empty table's statistics as they were, so an empty table's are dropped
    instead (re-declaring each column's own type, which discards them; the table lock waits at
    most ``lock_timeout_ms``). Returns the tables whose statistics could not be dropped."""
    # Raw: no ORM form (ANALYZE, pg_stats and ALTER COLUMN TYPE: the erasure's clean-up)
    if connection.vendor != "postgresql":
        return []
    stale = []
    quote = connection.ops.quote_name
    for table in sorted(set(tables)):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {quote(table)}")
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {quote(table)})")  # noqa: S608 (a quoted table name)
            if cursor.fetchone()[0]:
                continue
            cursor.execute(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                "WHERE a.attrelid = %s::regclass AND a.attname IN "
                "(SELECT attname FROM pg_stats WHERE tablename = %s AND schemaname = ANY (current_schemas(false)))",
                [table, table],
            )
            columns = cursor.fetchall()
            if not columns:
                continue
            cursor.execute(f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}")
            alter = ", ".join(f"ALTER COLUMN {quote(name)} TYPE {type_}" for name, type_ in columns)
            try:
                with transaction.atomic():
                    cursor.execute(f"ALTER TABLE {quote(table)} {alter}")
            except OperationalError:  # the lock was not granted in time
                stale.append(table)
    return stale


def wal_truncate(*, wait_ms: int = 2000) -> bool:
    """SQLite: copy the write-ahead log into the database file and truncate it to zero bytes,
    so that no earlier version of an erased row stays in the ``-wal`` file. A reader still
    using the log prevents it (after ``wait_ms``): returns False then, True when done (or
    when the database is not SQLite in WAL mode)."""
    # Raw: no ORM form (SQLite's PRAGMAs: the erasure's truncation of the WAL)
    if connection.vendor != "sqlite":
        return True
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        if cursor.fetchone()[0].lower() != "wal":  # e.g. an in-memory database
            return True
        if connection.in_atomic_block:  # a checkpoint cannot run inside a transaction
            return False
        cursor.execute("PRAGMA busy_timeout")
        previous = cursor.fetchone()[0]
        cursor.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
        try:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            busy, _, _ = cursor.fetchone()
        finally:
            cursor.execute(f"PRAGMA busy_timeout = {int(previous)}")
    return busy == 0
