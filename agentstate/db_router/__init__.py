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

One module per job: ``router`` (the router and ``replica_reads``), ``health`` (the checks of a
replica and the verdicts kept of them), ``middleware`` (read-your-writes). Settings name the
router and the middleware here, the package's face.
"""

from agentstate.db_router.health import (
    ReplicaCheck,
    ReplicaVerdict,
    replica_is_healthy,
    replica_verdicts,
    replica_verdicts_clear,
)
from agentstate.db_router.middleware import ReadYourWritesMiddleware
from agentstate.db_router.router import ReplicaRouter, replica_for_read, replica_reads

__all__ = [
    "ReadYourWritesMiddleware",
    "ReplicaCheck",
    "ReplicaRouter",
    "ReplicaVerdict",
    "replica_for_read",
    "replica_is_healthy",
    "replica_reads",
    "replica_verdicts",
    "replica_verdicts_clear",
]
