"""A throwaway PostgreSQL server for the HTTP benchmark, with pg_stat_statements preloaded so
every statement the service sends (BEGIN, COMMIT and health checks included) can be counted,
and nobody else's queries share it. Same binaries and settings as this machine's development
server (fsync=off, as there); removed when the benchmark ends."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Cluster:
    url: str  # database "agentstate" on the private server
    admin_url: str  # its "postgres" database, where pg_stat_statements is read
    postmaster_pid: int


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pg_bin() -> Path:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not candidates:
        raise SystemExit("The HTTP benchmark needs PostgreSQL's server binaries (apt-get install postgresql).")
    return candidates[-1]


@contextlib.contextmanager
def postgres_cluster() -> Iterator[Cluster]:
    """Start a private server on a free port and yield how to reach it."""
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    pg_bin = _pg_bin()
    workdir = Path(tempfile.mkdtemp(prefix="agentstate-bench-pg-"))
    data = workdir / "data"
    data.mkdir()
    if as_postgres:
        shutil.chown(workdir, "postgres", "postgres")
        shutil.chown(data, "postgres", "postgres")
    data.chmod(0o700)
    port = free_port()
    quiet = {"stdout": subprocess.DEVNULL, "check": True}
    subprocess.run(
        [
            *as_postgres,
            pg_bin / "initdb",
            "-D",
            data,
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        ],
        **quiet,
    )
    options = (
        f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={data} -c fsync=off "
        "-c max_connections=100 -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=on"
    )
    ctl = [*as_postgres, pg_bin / "pg_ctl", "-D", data]
    subprocess.run([*ctl, "-l", data / "server.log", "-w", "-t", "60", "-o", options, "start"], **quiet)
    try:
        import psycopg

        admin_url = f"postgres://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        pid = int((data / "postmaster.pid").read_text().split()[0])
        yield Cluster(url=f"postgres://postgres@127.0.0.1:{port}/agentstate", admin_url=admin_url, postmaster_pid=pid)
    finally:
        subprocess.run([*ctl, "-m", "fast", "-w", "stop"], stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(workdir, ignore_errors=True)
