"""Whether a replica may serve reads: each process checks a replica against the primary at most
once per ``REPLICA_CHECK_SECONDS`` and keeps the verdict (the rule: ``agentstate.db_router``);
silence is shared through the cache, so every process calls a replica lost at once; a replica that
does not answer in time is abandoned."""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections

from agentstate.watchdog import Deadline, watchdog

logger = logging.getLogger("agentstate.db_router")  # the name operators filter by, as before the split
SILENT_KEY = "agentstate:replica-silent:{}"  # (received position, wall-clock time it was first found lacking)

# What a replica has replayed, how long ago it replayed its last commit, and how far it has
# received WAL (which stops moving when its receiver does): NULL positions when it is not a standby
# at all (a test mirror: never behind). Functions any role may call: no monitoring privilege needed.
_REPLAYED_SQL = """
SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() END::text,
  EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()),
  CASE WHEN pg_is_in_recovery() THEN COALESCE(pg_last_wal_receive_lsn(), '0/0') END::text
"""
_PRIMARY_POSITION_SQL = "SELECT pg_current_wal_flush_lsn()::text"


@dataclass(frozen=True)
class ReplicaCheck:
    """What one check of a replica measured: its lag behind the primary, the WAL position it has
    received (None when it is not a standby) and the primary's, or the type of the error that made
    it fail (then ``lag`` is None)."""

    lag: float | None
    received: int | None = None
    primary: int = 0
    error: str = ""


@dataclass(frozen=True)
class ReplicaVerdict:
    """What a process last found of a replica: ``state`` is ``ok`` (reads may go there),
    ``skipped`` or ``lost`` (reads go to the primary), ``reason`` says why in a few words."""

    state: str
    reason: str
    lag: float | None
    checked_at: float  # time.monotonic() of the check
    received: int | None = None
    not_receiving_since: float | None = None  # the first check (of any process) that saw no WAL arrive

    @property
    def healthy(self) -> bool:
        return self.state == "ok"


# alias -> the last verdict, per process
_verdicts: dict[str, ReplicaVerdict] = {}
_verdicts_lock = threading.Lock()


def replica_is_healthy(alias: str) -> bool:
    """Whether ``alias`` answers within the lag limit and receives WAL: checked at most once per
    ``REPLICA_CHECK_SECONDS`` in this process, any failure meaning no."""
    verdict = _verdicts.get(alias)
    if verdict is not None and verdict.checked_at + settings.REPLICA_CHECK_SECONDS > time.monotonic():
        return verdict.healthy
    try:
        with deadline(alias) as expired:
            check = replica_check(alias)
    except Exception as exc:  # down, refusing, silent or forbidden: any failure means "do not read here"
        check = ReplicaCheck(lag=None, error=no_answer() if deadline_fired(expired) else type(exc).__name__)
        close_replica(alias)
    return mark_replica(alias, check).healthy


def replica_verdicts(*, refresh: bool) -> dict[str, ReplicaVerdict | None]:
    """What this process last found of each replica (None: not checked yet); ``refresh`` checks
    first those whose verdict is older than ``REPLICA_CHECK_SECONDS``, as a listing would."""
    if refresh:
        for alias in settings.DATABASE_REPLICAS:
            replica_is_healthy(alias)
    return {alias: _verdicts.get(alias) for alias in settings.DATABASE_REPLICAS}


def replica_check(alias: str) -> ReplicaCheck:
    """Measure ``alias`` against the primary: the primary's flushed WAL position first (one query
    there), then what the replica replayed and received (one query there)."""
    # Raw: no ORM form (the WAL positions of the primary and of a replica)
    replica = connections[alias]
    if replica.vendor != "postgresql":
        with replica.cursor() as cursor:
            cursor.execute("SELECT 0")
        return ReplicaCheck(lag=0.0)
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(_PRIMARY_POSITION_SQL)
        primary = cursor.fetchone()[0]
    with replica.cursor() as cursor:
        cursor.execute(_REPLAYED_SQL)
        replayed, last_commit_age, received = cursor.fetchone()
    if replayed is None:
        return ReplicaCheck(lag=0.0)
    lag = lag_behind(primary=primary, replayed=replayed, last_commit_age=last_commit_age)
    return ReplicaCheck(lag=lag, received=wal_position(received), primary=wal_position(primary))


def verdict_after(previous: ReplicaVerdict | None, check: ReplicaCheck, *, now: float) -> ReplicaVerdict:
    """The verdict a check gives, given the one before: ok within the lag limit, else skipped; lost
    once it has lacked WAL the primary has, with none arriving (its received position not moving),
    for ``REPLICA_LOST_SECONDS``. A failed check keeps what the one before knew of its silence."""
    silent_since = previous.not_receiving_since if previous is not None else None
    received_before = previous.received if previous is not None else None
    if check.error:
        return ReplicaVerdict("skipped", f"error: {check.error}", None, now, received_before, silent_since)
    lag = check.lag if check.lag is not None else float("inf")
    lacking = check.received is not None and check.received < check.primary and lag > 0
    arriving = check.received is not None and received_before is not None and check.received > received_before
    if not lacking or arriving:
        silent_since = None
    elif silent_since is None:
        silent_since = now
    silent = 0.0 if silent_since is None else now - silent_since
    if silent_since is not None and silent >= settings.REPLICA_LOST_SECONDS:
        reason = f"no WAL received for {silent:.0f} s while the primary moved on (lag {lag:.1f} s)"
        return ReplicaVerdict("lost", reason, lag, now, check.received, silent_since)
    state = "ok" if lag <= settings.REPLICA_MAX_LAG_SECONDS else "skipped"
    reason = f"lag {lag:.1f} s" + (f", no WAL received for {silent:.0f} s" if silent >= 1 else "")
    return ReplicaVerdict(state, reason, lag, now, check.received, silent_since)


def lag_behind(*, primary: str, replayed: str, last_commit_age: float | None) -> float:
    """A replica's lag from the primary's WAL position (read first) and the replica's: none once it
    has reached it, else at most the age of the last commit it replayed (every commit it lacks came
    after that one); infinite when it has replayed none."""
    if wal_position(replayed) >= wal_position(primary):
        return 0.0
    return float("inf") if last_commit_age is None else max(0.0, float(last_commit_age))


def wal_position(lsn: str) -> int:
    """A PostgreSQL LSN (``16/B374D848``) as a number."""
    high, low = lsn.split("/")
    return (int(high, 16) << 32) + int(low, 16)


@contextmanager
def deadline(alias: str) -> Iterator[Deadline | None]:
    """Within: what ``alias`` (PostgreSQL) has not answered after ``REPLICA_TIMEOUT_SECONDS`` is
    abandoned. The watchdog shuts the connection's socket down, so the wait on it ends at once with
    a DatabaseError, and the connection is closed on the way out (the deadline's ``fired`` says so)."""
    wrapper = connections[alias]
    if wrapper.vendor != "postgresql":
        yield None
        return

    def shut_down() -> None:
        if wrapper.connection is not None:
            # A copy of the descriptor: shutting it down ends the connection for every copy.
            with socket.socket(fileno=os.dup(wrapper.connection.pgconn.socket)) as sock:
                sock.shutdown(socket.SHUT_RDWR)

    try:
        with watchdog.after(settings.REPLICA_TIMEOUT_SECONDS, shut_down) as expired:
            yield expired
    finally:  # after the watchdog is done with it: a shut-down socket never outlives the call
        if expired.fired:
            close_replica(alias)


def deadline_fired(expired: Deadline | None) -> bool:
    return expired is not None and expired.fired


def no_answer() -> str:
    return f"no answer within {settings.REPLICA_TIMEOUT_SECONDS:g} s"


def replica_verdicts_clear() -> None:
    """Forget every replica's verdict, and the silences shared for them (tests, and after an
    operator changes replicas)."""
    with _verdicts_lock:
        aliases = {*_verdicts, *settings.DATABASE_REPLICAS}
        _verdicts.clear()
    try:
        cache.delete_many([SILENT_KEY.format(alias) for alias in aliases])
    except Exception:  # noqa: S110 (a cache that is down holds nothing to forget that it will answer with)
        pass


class _Unreadable:
    """The shared cache did not answer: each process counts silence from its own checks."""


_UNREADABLE = _Unreadable()
_Silence = tuple[int, float] | None  # the shared record: (received position, wall-clock start), or none


def _silence_read(alias: str, check: ReplicaCheck) -> _Silence | _Unreadable:
    """The silence other processes found, for a check that can use it (of a standby, or failed)."""
    if not check.error and check.received is None:
        return None  # not a standby: never silent, nothing to share
    try:
        found = cache.get(SILENT_KEY.format(alias))
    except Exception:
        logger.warning("replica silence cache unavailable: counting from this process's checks", exc_info=True)
        return _UNREADABLE
    return (int(found[0]), float(found[1])) if found else None


def _silence_shared(previous: ReplicaVerdict | None, shared: _Silence, now: float) -> ReplicaVerdict:
    """``previous`` with the shared silence in place of this process's own (its start on this
    process's monotonic clock): what ``verdict_after`` compares a check with."""
    received, since = shared if shared is not None else (None, None)
    start = None if since is None else now - max(0.0, time.time() - since)
    if previous is None:
        return ReplicaVerdict("skipped", "not checked yet", None, now, received, start)
    return dataclasses.replace(previous, received=received, not_receiving_since=start)


def _silence_write(alias: str, verdict: ReplicaVerdict, shared: _Silence, now: float) -> None:
    """Share what a successful check found: a silence that started at a new position, or none."""
    key = SILENT_KEY.format(alias)
    try:
        if verdict.not_receiving_since is None:
            if shared is not None:
                cache.delete(key)
        elif verdict.received is not None and (shared is None or shared[0] != verdict.received):
            record = (verdict.received, time.time() - (now - verdict.not_receiving_since))
            if shared is None:
                cache.add(key, record, None)  # of two processes finding it at once, the first written stays
            else:
                cache.set(key, record, None)
    except Exception:
        logger.warning("replica silence cache unavailable: silence not shared", exc_info=True)


def mark_replica(alias: str, check: ReplicaCheck) -> ReplicaVerdict:
    """Keep the verdict ``check`` gives, counting silence from the shared record when the cache
    answers; log when a replica's state changes (once, not per check)."""
    shared = _silence_read(alias, check)
    with _verdicts_lock:
        previous = _verdicts.get(alias)
        now = time.monotonic()
        before = previous if isinstance(shared, _Unreadable) else _silence_shared(previous, shared, now)
        verdict = _verdicts[alias] = verdict_after(before, check, now=now)
    if not check.error and check.received is not None and not isinstance(shared, _Unreadable):
        _silence_write(alias, verdict, shared, now)
    if previous is None or previous.state != verdict.state:
        if verdict.state == "ok":
            logger.info("replica %s in use (%s)", alias, verdict.reason)
        elif verdict.state == "lost":
            logger.warning("replica %s lost, reads go to the primary until it is rebuilt (%s)", alias, verdict.reason)
        else:
            logger.warning("replica %s skipped, reads go to the primary (%s)", alias, verdict.reason)
    return verdict


def close_replica(alias: str) -> None:
    try:
        connections[alias].close()
    except Exception:  # noqa: S110 (a broken connection may fail to close; it is dropped either way)
        pass
