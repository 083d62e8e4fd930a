"""Which database a query goes to: the primary, or a streaming replica for reads that tolerate lag.

The rule (docs/SCALING.md, "Which reads go to a replica"):

- Everything goes to the primary unless the code runs inside ``replica_reads`` (the session and
  round listings and the message search of the API, the admin's changelists of process state, the dashboard's figures).
  Writes, reads inside a transaction, authentication, the erasure workflow and exports never do.
- Even there the primary serves the read when the request is not a safe method (GET, HEAD,
  OPTIONS), when the caller wrote in the last ``READ_YOUR_WRITES_SECONDS`` (an API key or a staff
  user: marked in the shared cache after every unsafe request, so every app process sees it), when
  the model's app is in ``DATABASE_PRIMARY_ONLY_APPS``, or when no replica is healthy.
- A replica is healthy when it answers and is at most ``REPLICA_MAX_LAG_SECONDS`` behind the
  primary; each process checks a replica at most once per ``REPLICA_CHECK_SECONDS`` and keeps the
  verdict. Lag is measured against the primary, never by the replica alone: each check reads the
  primary's flushed WAL position, then what the replica has replayed. Having reached that position
  it is caught up (lag 0); short of it, it lacks only commits made after the last one it replayed,
  so the age of that commit bounds its lag. A paused replay, a stalled sender and a partition all
  count, since the replica cannot know what it did not receive. One that is down, stalled or too
  far behind is skipped, and a call that fails on a replica is run again on the primary: the
  caller never sees the replica's failure. A replica that does not answer within
  ``REPLICA_TIMEOUT_SECONDS`` (a frozen host, or a stopped server whose kernel still acknowledges
  every packet, which no keepalive notices) counts as failed: its connection's socket is shut down.
- A replica that has received no WAL for ``REPLICA_LOST_SECONDS`` while the primary moved on is
  reported lost (logged, in ``/healthz``'s details and in ``/metrics``): without a slot or an
  archive holding the WAL it needs, it never catches up by itself. The silence counts from the
  first check by any app process that found it lacking WAL at the position it still has (kept in
  the shared cache), so every process calls it lost at the same moment; while the cache cannot be
  read, each process counts from its own checks.
- The shared cache only ever sends reads to the primary: when it cannot be read or written (Redis
  down), the caller counts as having written, and the request that wrote still gets its answer.

Why this bounds staleness for the caller's own writes: a replica whose lag was at most
``MAX_LAG`` when checked (at most ``CHECK`` seconds ago) has replayed every commit older than
``MAX_LAG + CHECK`` seconds, so settings require ``READ_YOUR_WRITES_SECONDS`` to exceed that sum.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.models import Model
from django.http import HttpRequest, HttpResponseBase

from agentstate import metrics
from agentstate.watchdog import Deadline, watchdog

logger = logging.getLogger(__name__)
_request: ContextVar[HttpRequest | None] = ContextVar("agentstate_db_request", default=None)
_replica: ContextVar[str | None] = ContextVar("agentstate_db_replica", default=None)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
WROTE_KEY = "agentstate:wrote:{}"
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


_P = ParamSpec("_P")
_R = TypeVar("_R")


class ReplicaRouter:
    """Reads go to the replica ``replica_reads`` chose, if any; everything else to the primary."""

    def db_for_read(self, model: type[Model], **hints: Any) -> str:
        alias = _replica.get()
        if (
            alias is None
            or model._meta.app_label in settings.DATABASE_PRIMARY_ONLY_APPS
            or connections[DEFAULT_DB_ALIAS].in_atomic_block
        ):
            return DEFAULT_DB_ALIAS
        return alias

    def db_for_write(self, model: type[Model], **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Model, obj2: Model, **hints: Any) -> bool:
        # A replica holds the primary's rows: an object read there may be related to one read here.
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


def replica_reads(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``func`` with its reads on a healthy replica when the rule above allows; if the replica
    fails during the call (any database error), mark it down and run ``func`` again on the primary,
    where a real bug fails again and is reported. Only for reads: ``func`` must change nothing. A
    ``TemplateResponse`` it returns must already be rendered."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        alias = replica_for_read()
        if alias is None:
            metrics.REPLICA_READS.labels(database=DEFAULT_DB_ALIAS).inc()
            return func(*args, **kwargs)
        token = _replica.set(alias)
        try:
            with deadline(alias) as expired:
                result = func(*args, **kwargs)
        except DatabaseError as exc:  # down, cancelled by a replay conflict, behind on a migration, or silent
            found = _no_answer() if _abandoned(expired) else f"{type(exc).__name__} during a read"
            _mark(alias, ReplicaCheck(lag=None, error=found))
            _close(alias)
        else:
            metrics.REPLICA_READS.labels(database=alias).inc()
            return result
        finally:
            _replica.reset(token)
        metrics.REPLICA_READS.labels(database=DEFAULT_DB_ALIAS).inc()
        return func(*args, **kwargs)

    return wrapper


def replica_for_read() -> str | None:
    """The replica the current reads may use, or None for the primary."""
    replicas = settings.DATABASE_REPLICAS
    if not replicas or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return None
    request = _request.get()
    if request is not None and request.method not in SAFE_METHODS:
        return None
    healthy = [alias for alias in replicas if replica_is_healthy(alias)]
    if not healthy or _caller_wrote_recently(request):
        return None
    return random.choice(healthy)  # noqa: S311 (spreads reads over replicas: no secret)


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
        check = ReplicaCheck(lag=None, error=_no_answer() if _abandoned(expired) else type(exc).__name__)
        _close(alias)
    return _mark(alias, check).healthy


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
            _close(alias)


def _abandoned(expired: Deadline | None) -> bool:
    return expired is not None and expired.fired


def _no_answer() -> str:
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


def _mark(alias: str, check: ReplicaCheck) -> ReplicaVerdict:
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


def _close(alias: str) -> None:
    try:
        connections[alias].close()
    except Exception:  # noqa: S110 (a broken connection may fail to close; it is dropped either way)
        pass


def _caller(request: HttpRequest | None) -> str | None:
    """Who the request acts for: its API key (by the key's public prefix) or its staff user."""
    if request is None:
        return None
    prefix = getattr(getattr(request, "auth", None), "prefix", None)
    if prefix:
        return f"key:{prefix}"
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    return None


def _caller_wrote_recently(request: HttpRequest | None) -> bool:
    """Whether the caller wrote in the window, as the shared cache says; without the cache, yes
    (reads go to the primary, never to a replica that may miss the caller's write)."""
    caller = _caller(request)
    if caller is None:
        return False
    try:
        return cache.get(WROTE_KEY.format(caller)) is not None
    except Exception:  # the cache is down or refusing: the safe side
        logger.warning("read-your-writes cache unavailable: reading from the primary", exc_info=True)
        return True


class ReadYourWritesMiddleware:
    """Makes the request visible to the router, and after an unsafe request (which may have
    written) marks its caller in the shared cache so its reads stay on the primary for
    ``READ_YOUR_WRITES_SECONDS``. Costs nothing without replicas. Goes after authentication."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        token = _request.set(request)
        try:
            response = self.get_response(request)
        finally:
            _request.reset(token)
        if settings.DATABASE_REPLICAS and request.method not in SAFE_METHODS:
            caller = _caller(request)
            if caller is not None:
                try:
                    cache.set(WROTE_KEY.format(caller), 1, math.ceil(settings.READ_YOUR_WRITES_SECONDS))
                except Exception:  # the write is committed: its answer goes out whatever the cache
                    logger.warning("read-your-writes cache unavailable: mark not recorded", exc_info=True)
        return response
