"""After an erasure commits: the copies of erased rows kept outside the database's live tables.

PostgreSQL's planner statistics (``pg_stats``) keep sampled values of deleted rows until the
next ANALYZE; SQLite's write-ahead log keeps earlier versions of the pages that held them until
it is checkpointed and truncated (and the database file keeps them until then too); Redis keeps
the erased sessions' working state until sessions_app clears it after the commit; SQLite's
full-text index (FTS5) keeps the words of deleted rows in its segments until they are merged. The erasure's
own transaction records this clean-up as owed on the request (``storage_pending``), so a crash
at any moment after the commit leaves it flagged; it runs right after the commit and the note is
cleared only once it has run. What could not be done then (a reader holding SQLite's log open),
or never ran (a crash), ``manage.py erasure_storage_cleanup`` finishes. What no command here can
clear (dead tuples until VACUUM, WAL segments, replicas, backups) is described in
docs/COMPLIANCE.md.
"""

from __future__ import annotations

import logging
import time

from django.contrib.admin.models import LogEntry
from django.db import connection

from agentstate.search.engine import text_indexes_compact
from agentstate.subject_data import subject_tables, subject_text_indexes
from agentstate.subjects import statistics_refresh, wal_truncate
from sessions_app import selectors as session_selectors
from sessions_app import services as session_services
from userdata_app.erasure.scope import kinds_in_scope
from userdata_app.models import ErasureRequest, ErasureSubject

Scope = ErasureRequest.Scope
logger = logging.getLogger(__name__)
WAL_PENDING = (
    "SQLite's write-ahead log (the -wal file) still holds erased rows: a reader kept it open, so it could not be "
    "truncated."
)
# What the clean-up after an erasure has to clear, per database vendor: recorded with the erasure
# before it commits, cleared once the clean-up has run.
STORAGE_CLEANUP_OWED = {
    "sqlite": "SQLite's write-ahead log (the -wal file) and the database file may still hold erased rows: the log "
    "has not been checkpointed and truncated since the erasure.",
    "postgresql": "PostgreSQL's planner statistics (pg_stats) of the tables the erasure touched may still hold "
    "erased values: they have not been refreshed since the erasure.",
}
# Also owed by an erasure of process state when working state lives outside the database (Redis).
WORKING_STATE_OWED = (
    "Redis may still hold the erased sessions' working state: it has not been cleared since the erasure."
)
WORKING_STATE_UNREACHABLE = (
    "Redis may still hold the working state of erased sessions: it could not be reached to sweep it."
)
# What the clean-up has cleared once nothing is pending, per database vendor, and what it cannot
# clear (docs/COMPLIANCE.md, "What can still physically remain after an erasure").
STORAGE_CLEANED = {
    "sqlite": "no copy of erased rows is left in the write-ahead log, the full-text indexes, the statistics or the "
    "working state.",
    "postgresql": "the planner statistics are refreshed and the working state swept. Erased rows stay in the "
    "tables' and indexes' files as dead tuples until VACUUM, and in the write-ahead log until its segments are "
    "recycled (docs/COMPLIANCE.md, 'What can still physically remain after an erasure').",
}


def storage_cleaned() -> str:
    """What a finished clean-up may say of the database's storage: true on this vendor."""
    return STORAGE_CLEANED[connection.vendor]


def _tables(scope: str) -> list[str]:
    """The tables an erasure of ``scope`` deletes from (every declared model in scope) or
    overwrites (the request's subjects, the admin log)."""
    return [*subject_tables(*kinds_in_scope(scope)), ErasureSubject._meta.db_table, LogEntry._meta.db_table]


def storage_cleanup(*, scope: str = Scope.EVERYTHING) -> str:
    """Compact the full-text indexes of what an erasure of ``scope`` deleted, refresh the
    statistics of the tables it touched and truncate SQLite's log; returns what is still pending, "" when nothing is."""
    pending = []
    text_indexes_compact(subject_text_indexes(*kinds_in_scope(scope)))
    stale = statistics_refresh(tables=_tables(scope))
    if stale:
        pending.append(
            f"PostgreSQL's statistics of {', '.join(stale)} may still hold erased values (the table was busy)."
        )
    if not wal_truncate():
        pending.append(WAL_PENDING)
    return " ".join(pending)


def storage_cleanup_owed(*, scope: str) -> str:
    """What an erasure of ``scope`` leaves to clear after its commit: the erasure records it on
    the request in its own transaction (``storage_pending``), "" when there is nothing."""
    owed = [STORAGE_CLEANUP_OWED.get(connection.vendor, "")]
    if scope == Scope.EVERYTHING and session_selectors.working_state_outlives_deleted_sessions():
        owed.append(WORKING_STATE_OWED)
    return " ".join(note for note in owed if note)


def erasure_storage_after_commit(*, request_pk: int, scope: str) -> None:
    """Run once the erasure has committed (``transaction.on_commit``): the clean-up, then the
    request's note says what is still pending ("" once everything has run). The erased sessions'
    working state was cleared just before (``erase_subject`` registered that first); if the store
    refused it (Redis down), the note keeps saying so. Never raises: the erasure has committed and
    its answer must say so; whatever fails here leaves the note as the erasure wrote it, everything
    owed, for ``erasure_storage_cleanup``."""
    try:
        pending = storage_cleanup(scope=scope)
        if session_services.working_state_clear_refused():
            pending = f"{pending} {WORKING_STATE_OWED}".strip()
        ErasureRequest.objects.filter(pk=request_pk).update(storage_pending=pending)
        if not pending:
            wal_truncate()  # the note's own write (the request's row, nothing of the subject): the log ends empty
    except Exception:
        logger.warning("clean-up after erasure request %s left pending", request_pk, exc_info=True)


def erasure_storage_retry(*, timeout: float, interval: float = 1.0) -> str:
    """Run the clean-up until nothing is pending or ``timeout`` seconds have passed; once it
    succeeds, the requests marked pending before it started are marked done (one committed while
    it ran keeps its note for its own clean-up). Returns what is still pending."""
    deadline = time.monotonic() + timeout
    while True:
        flagged = list(ErasureRequest.objects.exclude(storage_pending="").values_list("pk", flat=True))
        pending = storage_cleanup()
        try:
            session_services.working_state_orphans_clear()
        except Exception:  # Redis down or refusing: reported like the rest, retried until the timeout
            logger.warning("working state not swept", exc_info=True)
            pending = f"{pending} {WORKING_STATE_UNREACHABLE}".strip()
        if not pending:
            ErasureRequest.objects.filter(pk__in=flagged).update(storage_pending="")
            wal_truncate()
            return ""
        if time.monotonic() >= deadline:
            return pending
        time.sleep(interval)
