"""``/metrics``: Prometheus' text format, for operators only (agentstate.operators). The counters
come from agentstate.metrics (summed over the server's worker processes); the gauges below are read
when the scrape asks, from the same sources as ``/healthz``'s details: the router's check of each
replica (made again when older than ``AGENTSTATE_REPLICA_CHECK_SECONDS``) and PgBouncer's pools."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client.core import GaugeMetricFamily, Metric

from agentstate import metrics, pgbouncer
from agentstate.db_router.health import replica_verdicts
from agentstate.operators import is_operator

REPLICA_STATES = ("ok", "skipped", "lost")


class ReplicaCollector:
    """Each replica's lag, state and silence, as the router finds it now."""

    def collect(self) -> Iterator[Metric]:
        lag = GaugeMetricFamily(
            "agentstate_replica_lag_seconds",
            "How far the replica is behind the primary, measured against the primary's WAL position "
            "(NaN when the check failed, +Inf when it replayed no commit).",
            labels=["replica"],
        )
        state = GaugeMetricFamily(
            "agentstate_replica_state",
            "1 for the replica's state: ok (reads may go there), skipped or lost (reads go to the primary).",
            labels=["replica", "state"],
        )
        silent = GaugeMetricFamily(
            "agentstate_replica_not_receiving_seconds",
            "How long the replica has been behind the primary with no WAL arriving, counted from the first check "
            "of any app process that found it so (0 while WAL arrives or it has all of it).",
            labels=["replica"],
        )
        verdicts = replica_verdicts(refresh=True)
        now = time.monotonic()
        for alias, verdict in verdicts.items():
            if verdict is None:
                continue
            lag.add_metric([alias], math.nan if verdict.lag is None else verdict.lag)
            for name in REPLICA_STATES:
                state.add_metric([alias, name], float(verdict.state == name))
            since = verdict.not_receiving_since
            silent.add_metric([alias], 0.0 if since is None else now - since)
        yield from (lag, state, silent)


class PoolCollector:
    """PgBouncer's pools of the app's database, when its admin console is configured."""

    def collect(self) -> Iterator[Metric]:
        reading = pgbouncer.pool_read()
        if reading is None:
            return
        up = GaugeMetricFamily(
            "agentstate_pgbouncer_up", "1 when PgBouncer's SHOW POOLS answered this scrape, 0 when it did not."
        )
        up.add_metric([], 0.0 if reading.error else 1.0)
        families = {
            "clients_waiting": ("agentstate_pgbouncer_clients_waiting", "Clients waiting for a server connection."),
            "clients_active": ("agentstate_pgbouncer_clients_active", "Clients holding a server connection."),
            "servers_active": ("agentstate_pgbouncer_servers_active", "Server connections in use by a client."),
            "servers_idle": ("agentstate_pgbouncer_servers_idle", "Server connections free to use."),
            "max_wait_seconds": (
                "agentstate_pgbouncer_max_wait_seconds",
                "How long the oldest waiting client has waited for a server connection.",
            ),
        }
        gauges = {field: GaugeMetricFamily(name, text, labels=["user"]) for field, (name, text) in families.items()}
        for pool in reading.pools:
            for field, gauge in gauges.items():
                gauge.add_metric([pool.user], float(getattr(pool, field)))
        yield up
        yield from gauges.values()


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    """``/metrics`` for an operator; anyone else gets a 401 (a staff login or the token needed)."""
    if not is_operator(request):
        refused = HttpResponse(
            "Operators only: log in as staff, or send Authorization: Bearer <AGENTSTATE_OPERATOR_TOKEN>.\n",
            status=401,
            content_type="text/plain; charset=utf-8",
        )
        refused["WWW-Authenticate"] = 'Bearer realm="agentstate operators"'
        return refused
    body = metrics.exposition([ReplicaCollector(), PoolCollector()])
    return HttpResponse(body, content_type=metrics.CONTENT_TYPE)
