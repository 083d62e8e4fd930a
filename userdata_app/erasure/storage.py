"""After an erasure commits: the copies of erased rows a database keeps outside its live tables.

PostgreSQL's planner statistics (``pg_stats``) keep sampled values of deleted rows until the
next ANALYZE; SQLite's write-ahead log keeps earlier versions of the pages that held them until
it is checkpointed and truncated. Both are cleared right after the commit; what could not be
(a reader holding SQLite's log open) is recorded on the request (``storage_pending``) and retried
by ``manage.py erasure_storage_cleanup``. What no command here can clear (dead tuples until
VACUUM, WAL segments, replicas, backups) is described in docs/COMPLIANCE.md.
"""

from __future__ import annotations

import time

from django.contrib.admin.models import LogEntry

from agentstate.subjects import statistics_refresh, wal_truncate
from sessions_app import selectors as session_selectors
from userdata_app.models import AdkEventUserDelta, AdkUserState, ErasureRequest, ErasureSubject, UserDatum

Scope = ErasureRequest.Scope
WAL_PENDING = (
    "SQLite's write-ahead log (the -wal file) still holds erased rows: a reader kept it open, so it could not be "
    "truncated."
)


def _tables(scope: str) -> list[str]:
    """The tables an erasure of ``scope`` deletes from or overwrites."""
    tables = [model._meta.db_table for model in (UserDatum, AdkUserState, AdkEventUserDelta, ErasureSubject, LogEntry)]
    if scope == Scope.EVERYTHING:
        tables += session_selectors.subject_process_state_tables()
    return tables


def storage_cleanup(*, scope: str = Scope.EVERYTHING) -> str:
    """Refresh the statistics of the tables an erasure of ``scope`` touched and truncate
    SQLite's log; returns what is still pending, "" when nothing is."""
    pending = []
    stale = statistics_refresh(tables=_tables(scope))
    if stale:
        pending.append(
            f"PostgreSQL's statistics of {', '.join(stale)} may still hold erased values (the table was busy)."
        )
    if not wal_truncate():
        pending.append(WAL_PENDING)
    return " ".join(pending)


def erasure_storage_after_commit(*, request_pk: int, scope: str) -> None:
    """Run once the erasure has committed (``transaction.on_commit``); records what is pending."""
    pending = storage_cleanup(scope=scope)
    if pending:
        ErasureRequest.objects.filter(pk=request_pk).update(storage_pending=pending)


def erasure_storage_retry(*, timeout: float, interval: float = 1.0) -> str:
    """Retry the clean-up until nothing is pending or ``timeout`` seconds have passed; once it
    succeeds, no request is marked pending any more. Returns what is still pending."""
    deadline = time.monotonic() + timeout
    while True:
        pending = storage_cleanup()
        if not pending:
            ErasureRequest.objects.exclude(storage_pending="").update(storage_pending="")
            return ""
        if time.monotonic() >= deadline:
            return pending
        time.sleep(interval)
