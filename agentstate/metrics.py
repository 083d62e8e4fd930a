"""The service's Prometheus counters, and their exposition with the gauges read at scrape time.

gunicorn runs several worker processes and a scrape reaches one of them, so:

- **Counters** count in every process and are summed at each scrape: under gunicorn in
  prometheus-client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, which gunicorn.conf.py sets
  to a fresh directory per server), each worker writes its counts to a memory-mapped file there,
  and a scrape adds up every file, those of workers already recycled included. Without that
  directory (runserver, tests, a management command) they live in the process.
- **Gauges** (replica health, pool saturation) are not kept at all: the collectors given to
  ``exposition`` read them when the scrape asks, from whichever worker answers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, disable_created_metrics, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4  # the text format every Prometheus reads
disable_created_metrics()  # no *_created series: multiprocess mode has none, so neither does a single process

_counters = CollectorRegistry()
REPLICA_READS = Counter(
    "agentstate_replica_reads",
    "Reads that may use a replica (listings, the admin's lists, the dashboard), by the database that served them.",
    ["database"],
    registry=_counters,
)
UNAVAILABLE_RESPONSES = Counter(
    "agentstate_unavailable_responses",
    "Requests answered 503 in the API's error shape (the service could not serve them), by error code.",
    ["code"],
    registry=_counters,
)


def exposition(collectors: Iterable[Collector]) -> bytes:
    """Every counter (summed over the server's processes when they share a directory) and what
    ``collectors`` read now, in Prometheus' text format."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        registry.register(_counters)
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry)
