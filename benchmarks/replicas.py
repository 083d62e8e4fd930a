"""Scale-out, measured in one run (docs/SCALING.md): the same HTTP load on three deployments of
the service side by side, each gunicorn on the same private primary.

- ``primary``: reads and writes on the primary, reached directly (one machine's setup);
- ``replica``: the same, plus ``DATABASE_REPLICA_URLS`` naming a streaming replica, so the
  lag-tolerant session listing reads there;
- ``pgbouncer``: the primary reached through PgBouncer in transaction pooling, no replica.

Two workloads per deployment: ``list`` (GET the session listing, a page of 20 sessions; one
key that never writes, so the replica may serve it) and ``append`` (POST one message: the write
path, for the pooler's overhead and the single-primary write ceiling). Points are interleaved
(every deployment once, then again) so drift on a shared machine hits all of them alike. For
each point: requests/s, latency, and CPU per request of the app, the primary, the replica and
PgBouncer (from /proc), which says where the work went.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from typing import Any

from agentstate_site import bulk_data
from benchmarks import report
from benchmarks.http_load import _cpu_seconds, _wrk, gunicorn
from benchmarks.topology import Server, replica_wait, with_port
from tools.pgcluster import Cluster

SESSIONS = 2_000
CONNECTIONS = 8
DEPLOYMENTS = ("primary", "replica", "pgbouncer")
WORKLOADS = ("list", "append")


def _prepare() -> tuple[str, str, str]:
    """A tenant with SESSIONS sessions of one user, a key that only reads, a key that writes, and
    the session the writes go to."""
    from agentstate.tenancy.services import api_key_create, tenant_get_or_create

    tenant = tenant_get_or_create(slug="bench")
    bulk_data.sessions_create(tenant=tenant, user_id="agent", count=SESSIONS)
    bulk_data.analyze()
    _, reader = api_key_create(tenant=tenant, name="replicas benchmark reader")
    _, writer = api_key_create(tenant=tenant, name="replicas benchmark writer")
    return reader, writer, "/api/v1/users/agent/sessions/s1/"


def _load(*, url: str, env: dict[str, str], seconds: float) -> dict[str, Any]:
    return _wrk(url=url, env={**os.environ, **env, "BENCH_DELAY_MS": "0"}, connections=CONNECTIONS, seconds=seconds)


def _measure(*, url: str, env: dict[str, str], seconds: float, pids: dict[str, int]) -> dict[str, Any]:
    """One closed-loop point: requests/s, latency, and CPU per request of each process group."""
    before = {name: _cpu_seconds(pid) for name, pid in pids.items()}
    result = _load(url=url, env=env, seconds=seconds)
    requests = max(result["requests"], 1)
    return {
        "rps": round(result["requests"] / (result["duration_us"] / 1e6), 1),
        "p50_ms": result["latency_us"]["p50"] / 1000,
        "p99_ms": result["latency_us"]["p99"] / 1000,
        "errors": sum(result["errors"].values()),
        "cpu_ms_per_request": {
            name: round((_cpu_seconds(pid) - before[name]) * 1000 / requests, 3) for name, pid in pids.items()
        },
    }


def run(
    *,
    primary_url: str,
    admin_url: str,
    primary_pid: int,
    replica: Cluster,
    bouncer: Server,
    redis_url: str,
    quick: bool = False,
    settings: dict[str, str] | None = None,
) -> dict[str, Any]:
    seconds = 4 if quick else 10
    repeats = 1 if quick else 3
    reader, writer, session_path = _prepare()
    replica_url = with_port(primary_url, replica.port)
    replica_wait(primary_url=admin_url, replica_url=replica_url)
    report.RESULTS_DIR.mkdir(exist_ok=True)
    log = report.RESULTS_DIR / "replicas-servers.log"
    base = {k: v for k, v in os.environ.items() if k not in ("AGENTSTATE_API_RATE", "DATABASE_REPLICA_URLS")}
    base.update(
        DJANGO_SETTINGS_MODULE="agentstate_site.settings",
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_LOG_LEVEL="WARNING",
        GUNICORN_LOG_LEVEL="warning",
        GUNICORN_MAX_REQUESTS="0",
        REDIS_URL=redis_url,
    )
    envs = {
        "primary": {**base, "DATABASE_URL": primary_url},
        "replica": {**base, "DATABASE_URL": primary_url, "DATABASE_REPLICA_URLS": replica_url},
        "pgbouncer": {
            **base,
            "DATABASE_URL": with_port(primary_url, bouncer.port),
            "DATABASE_TRANSACTION_POOLING": "true",
        },
    }
    print(f"replicas: primary {primary_url.rsplit('@', 1)[-1]}, replica :{replica.port}, pgbouncer :{bouncer.port}")
    wrk_env = {
        "list": {
            "BENCH_MODE": "get",
            "BENCH_KEY": reader,
            "BENCH_PATHS": "/api/v1/sessions/?user_id=agent&page_size=20",
        },
        "append": {"BENCH_MODE": "append", "BENCH_KEY": writer, "BENCH_PATHS": session_path},
    }
    pids = {"primary": primary_pid, "replica": replica.pid, "pgbouncer": bouncer.pid}
    points: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(gunicorn(env=env, settings=settings or {}, log=log)) for name, env in envs.items()
        }
        for deployment in DEPLOYMENTS:  # warm every worker's connections and caches
            for workload in WORKLOADS:
                _load(url=servers[deployment][0], env=wrk_env[workload], seconds=2)
        for repeat in range(repeats):
            for workload in WORKLOADS:
                for deployment in DEPLOYMENTS:
                    url, app_pid, _ = servers[deployment]
                    print(
                        f"replicas: {workload} on {deployment} ({repeat + 1}/{repeats}), "
                        f"{CONNECTIONS} connections, {seconds} s"
                    )
                    point = _measure(url=url, env=wrk_env[workload], seconds=seconds, pids={"app": app_pid, **pids})
                    points.append({"deployment": deployment, "workload": workload, "repeat": repeat, **point})
    summary = {}
    for workload in WORKLOADS:
        for deployment in DEPLOYMENTS:
            mine = [p for p in points if p["workload"] == workload and p["deployment"] == deployment]
            summary[f"{workload}/{deployment}"] = {
                "rps": statistics.median(p["rps"] for p in mine),
                "p50_ms": statistics.median(p["p50_ms"] for p in mine),
                "p99_ms": statistics.median(p["p99_ms"] for p in mine),
                "errors": sum(p["errors"] for p in mine),
                "cpu_ms_per_request": {
                    name: round(statistics.median(p["cpu_ms_per_request"][name] for p in mine), 3)
                    for name in ("app", "primary", "replica", "pgbouncer")
                },
            }
    append = summary["append/primary"]
    primary_ms = append["cpu_ms_per_request"]["primary"]
    return {
        "workers": servers["primary"].config["workers"],
        "threads": servers["primary"].config["threads"],
        "connections": CONNECTIONS,
        "seconds_per_point": seconds,
        "repeats": repeats,
        "sessions": SESSIONS,
        "points": points,
        "summary": summary,
        "ratios": {
            "list_rps_replica_over_primary": round(summary["list/replica"]["rps"] / summary["list/primary"]["rps"], 2),
            "list_rps_pgbouncer_over_direct": round(
                summary["list/pgbouncer"]["rps"] / summary["list/primary"]["rps"], 2
            ),
            "append_rps_pgbouncer_over_direct": round(
                summary["append/pgbouncer"]["rps"] / summary["append/primary"]["rps"], 2
            ),
        },
        # The primary's CPU per append bounds the appends one primary core can take, whatever the
        # number of app servers: the single-primary write ceiling, per core.
        "write_ceiling_appends_per_primary_core": round(1000 / primary_ms) if primary_ms else None,
    }


def print_table(result: dict[str, Any]) -> None:
    headers = [
        "workload",
        "deployment",
        "req/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "CPU ms/req app",
        "primary",
        "replica",
        "pgbouncer",
    ]
    rows = [
        [
            key.split("/")[0],
            key.split("/")[1],
            f"{v['rps']:.0f}",
            f"{v['p50_ms']:.2f}",
            f"{v['p99_ms']:.2f}",
            v["errors"],
            *(f"{v['cpu_ms_per_request'][n]:.3f}" for n in ("app", "primary", "replica", "pgbouncer")),
        ]
        for key, v in result["summary"].items()
    ]
    print(
        f"median of {result['repeats']} interleaved points, {result['connections']} connections, "
        f"{result['seconds_per_point']} s each"
    )
    print(report.table(headers, rows))
    for name, value in result["ratios"].items():
        print(f"{name}: {value:.2f}")
    print(
        f"single-primary write ceiling: about {result['write_ceiling_appends_per_primary_core']} "
        "appends/s per primary core"
    )
