"""The benchmarks' private servers: a PostgreSQL primary that counts statements (its streaming
replica is tools.pgcluster's), PgBouncer in transaction pooling and a Redis, each on a free
127.0.0.1 port, removed at the end. The same shapes as .ci/multinode and docs/SCALING.md."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tools import pgcluster
from tools.pgcluster import Cluster, free_port

_AS_POSTGRES = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@dataclass(frozen=True)
class Server:
    port: int
    pid: int


@contextlib.contextmanager
def statement_counting_cluster() -> Iterator[Cluster]:
    """A private primary with pg_stat_statements preloaded, so every statement the service sends
    (BEGIN, COMMIT and health checks included) can be counted, and nobody else's queries share it.
    The benchmark's database is created by whoever uses it; pg_stat_statements is read in "postgres"."""
    settings = {
        "max_connections": "100",
        "shared_preload_libraries": "pg_stat_statements",
        "pg_stat_statements.track_utility": "on",
    }
    with pgcluster.throwaway(settings=settings, prefix="agentstate-bench-pg-") as cluster:
        pgcluster.cluster_sql(cluster, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        yield cluster


def with_port(url: str, port: int) -> str:
    """``url`` (which names a port) with another port."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{parts.netloc.rsplit(':', 1)[0]}:{port}"))


def _workdir(prefix: str) -> Path:
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    if _AS_POSTGRES:
        shutil.chown(workdir, "postgres", "postgres")
    return workdir


def replica_wait(*, primary_url: str, replica_url: str, timeout: float = 60) -> None:
    """Until the replica has replayed everything the primary has committed."""
    import psycopg

    with psycopg.connect(primary_url, autocommit=True) as primary:
        lsn = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    deadline = time.monotonic() + timeout
    with psycopg.connect(replica_url, autocommit=True) as replica:
        while not replica.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [str(lsn)]).fetchone()[0]:
            if time.monotonic() > deadline:
                raise SystemExit("the benchmark's replica did not catch up")
            time.sleep(0.1)


@contextlib.contextmanager
def pgbouncer(cluster: Cluster, *, pool_size: int = 20) -> Iterator[Server]:
    """PgBouncer in transaction pooling in front of the primary, every database passed through."""
    if not shutil.which("pgbouncer"):
        raise SystemExit("The replicas benchmark needs PgBouncer (apt-get install pgbouncer).")
    workdir = _workdir("agentstate-bench-pgbouncer-")
    port = free_port()
    (workdir / "userlist.txt").write_text('"postgres" ""\n')
    (workdir / "pgbouncer.ini").write_text(
        f"[databases]\n* = host=127.0.0.1 port={cluster.port}\n[pgbouncer]\nlisten_addr = 127.0.0.1\n"
        f"listen_port = {port}\nunix_socket_dir =\nauth_type = trust\nauth_file = {workdir}/userlist.txt\n"
        f"pool_mode = transaction\nmax_client_conn = 500\ndefault_pool_size = {pool_size}\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
        f"logfile = {workdir}/pgbouncer.log\npidfile = {workdir}/pgbouncer.pid\n"
    )
    if _AS_POSTGRES:
        for name in ("userlist.txt", "pgbouncer.ini"):
            shutil.chown(workdir / name, "postgres", "postgres")
    subprocess.run([*_AS_POSTGRES, "pgbouncer", "-d", workdir / "pgbouncer.ini"], check=True)
    pid = 0
    try:
        for _ in range(100):
            if (workdir / "pgbouncer.pid").exists() and (pid := int((workdir / "pgbouncer.pid").read_text() or 0)):
                break
            time.sleep(0.05)
        yield Server(port=port, pid=pid)
    finally:
        if pid:
            subprocess.run(["kill", str(pid)], check=False)
        time.sleep(0.3)
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A private Redis (the shared cache that carries read-your-writes marks between processes)."""
    workdir = Path(tempfile.mkdtemp(prefix="agentstate-bench-redis-"))
    port = free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--maxmemory-policy",
            "noeviction",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.3)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)
