"""Which database a query goes to: the primary, or a streaming replica for reads that tolerate lag.

The rule (docs/SCALING.md, "Which reads go to a replica"):

- Everything goes to the primary unless the code runs inside ``replica_reads`` (the session and
  round listings of the API, the admin's changelists of process state, the dashboard's figures).
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
- The shared cache only ever sends reads to the primary: when it cannot be read or written (Redis
  down), the caller counts as having written, and the request that wrote still gets its answer.

Why this bounds staleness for the caller's own writes: a replica whose lag was at most
``MAX_LAG`` when checked (at most ``CHECK`` seconds ago) has replayed every commit older than
``MAX_LAG + CHECK`` seconds, so settings require ``READ_YOUR_WRITES_SECONDS`` to exceed that sum.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.models import Model
from django.http import HttpRequest, HttpResponseBase

logger = logging.getLogger(__name__)
_request: ContextVar[HttpRequest | None] = ContextVar("agentstate_db_request", default=None)
_replica: ContextVar[str | None] = ContextVar("agentstate_db_replica", default=None)
# alias -> (valid until, healthy, what the last check found), per process
_verdicts: dict[str, tuple[float, bool, str]] = {}
_verdicts_lock = threading.Lock()
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
WROTE_KEY = "agentstate:wrote:{}"

# What a replica has replayed, and how long ago it replayed its last commit: a NULL position when it
# is not a standby at all (a test mirror: never behind), '0/0' without a running WAL receiver (stale
# however recent its replay looks). The view's row, unlike its details, is visible to any role: the
# app needs no monitoring privilege.
_REPLAYED_SQL = """
SELECT CASE
  WHEN NOT pg_is_in_recovery() THEN NULL
  WHEN NOT EXISTS (SELECT 1 FROM pg_stat_wal_receiver) THEN '0/0'::pg_lsn
  ELSE pg_last_wal_replay_lsn()
END::text, EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())
"""
_PRIMARY_POSITION_SQL = "SELECT pg_current_wal_flush_lsn()::text"


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
            return func(*args, **kwargs)
        token = _replica.set(alias)
        try:
            with deadline(alias) as expired:
                return func(*args, **kwargs)
        except DatabaseError:  # down, cancelled by a replay conflict, behind on a migration, or silent
            _mark(alias, healthy=False, found=_no_answer() if expired.fired else "error during a read")
            _close(alias)
        finally:
            _replica.reset(token)
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
    """Whether ``alias`` answers within the lag limit: checked at most once per
    ``REPLICA_CHECK_SECONDS`` in this process, any failure meaning no."""
    now = time.monotonic()
    verdict = _verdicts.get(alias)
    if verdict is not None and verdict[0] > now:
        return verdict[1]
    try:
        with deadline(alias) as expired:
            lag = replica_lag_seconds(alias)
        healthy, found = lag <= settings.REPLICA_MAX_LAG_SECONDS, f"lag {lag:.1f} s"
    except Exception as exc:  # down, refusing, silent or forbidden: any failure means "do not read here"
        healthy, found = False, _no_answer() if expired.fired else f"error: {type(exc).__name__}"
        _close(alias)
    _mark(alias, healthy=healthy, found=found)
    return healthy


def replica_states() -> dict[str, str]:
    """What this process last found of each replica, without asking it (a probe must not wait on
    a replica): "ok (lag …)", "skipped (…)" with why, or "unchecked" before the first listing."""
    states = {}
    for alias in settings.DATABASE_REPLICAS:
        verdict = _verdicts.get(alias)
        if verdict is None:
            states[alias] = "unchecked"
        else:
            states[alias] = f"{'ok' if verdict[1] else 'skipped'} ({verdict[2]})"
    return states


def replica_lag_seconds(alias: str) -> float:
    """How far ``alias`` is behind the primary, in seconds: the primary's flushed WAL position
    first (one query there), then what the replica replayed (one query there)."""
    replica = connections[alias]
    if replica.vendor != "postgresql":
        with replica.cursor() as cursor:
            cursor.execute("SELECT 0")
        return 0.0
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(_PRIMARY_POSITION_SQL)
        primary = cursor.fetchone()[0]
    with replica.cursor() as cursor:
        cursor.execute(_REPLAYED_SQL)
        replayed, last_commit_age = cursor.fetchone()
    if replayed is None:
        return 0.0
    return lag_behind(primary=primary, replayed=replayed, last_commit_age=last_commit_age)


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


@dataclass
class Deadline:
    fired: bool = False


@contextmanager
def deadline(alias: str) -> Iterator[Deadline]:
    """Within: what ``alias`` (PostgreSQL) has not answered after ``REPLICA_TIMEOUT_SECONDS`` is
    abandoned. A timer shuts the connection's socket down, so the wait on it ends at once with a
    DatabaseError, and the connection is closed on the way out (``fired`` says it happened)."""
    expired = Deadline()
    wrapper = connections[alias]
    if wrapper.vendor != "postgresql":
        yield expired
        return
    lock = threading.Lock()
    finished = False

    def expire() -> None:
        with lock:
            if finished or wrapper.connection is None:
                return
            expired.fired = True
            # A copy of the descriptor: shutting it down ends the connection for every copy.
            with suppress(Exception), socket.socket(fileno=os.dup(wrapper.connection.pgconn.socket)) as sock:
                sock.shutdown(socket.SHUT_RDWR)  # suppressed: already closed or broken, nothing to wait on

    timer = threading.Timer(settings.REPLICA_TIMEOUT_SECONDS, expire)
    timer.daemon = True
    timer.start()
    try:
        yield expired
    finally:
        with lock:
            finished = True
        timer.cancel()
        if expired.fired:
            _close(alias)


def _no_answer() -> str:
    return f"no answer within {settings.REPLICA_TIMEOUT_SECONDS:g} s"


def replica_verdicts_clear() -> None:
    """Forget every replica's verdict (tests, and after an operator changes replicas)."""
    with _verdicts_lock:
        _verdicts.clear()


def _mark(alias: str, *, healthy: bool, found: str) -> None:
    """Keep the verdict; log when a replica starts or stops being skipped (once, not per check)."""
    with _verdicts_lock:
        previous = _verdicts.get(alias)
        _verdicts[alias] = (time.monotonic() + settings.REPLICA_CHECK_SECONDS, healthy, found)
    if previous is None or previous[1] != healthy:
        if healthy:
            logger.info("replica %s in use (%s)", alias, found)
        else:
            logger.warning("replica %s skipped, reads go to the primary (%s)", alias, found)


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
