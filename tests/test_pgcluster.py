"""tools.pgcluster, the throwaway PostgreSQL clusters of CI, the multi-node tests and the
benchmarks: a cluster keeps the settings it was made with across a stop and a start (the
multi-node tests restart the replica with nothing but its directory), its replica streams, and
nothing is left behind. Needs PostgreSQL's server programs (Debian's postgresql package)."""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from tools import pgcluster

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.servers,  # starts PostgreSQL clusters
    pytest.mark.skipif(
        not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")), reason="PostgreSQL's server programs are missing"
    ),
]


def setting(url: str, name: str) -> str:
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        return conn.execute("SELECT current_setting(%s)", [name]).fetchone()[0]


def streams(replica: pgcluster.Cluster) -> bool:
    with psycopg.connect(replica.url(), autocommit=True, connect_timeout=5) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'").fetchone()[0] == 1


def test_a_cluster_and_its_replica_keep_their_settings_across_a_restart_and_are_removed():
    settings = {"max_connections": "42", "timezone": "UTC"}
    with pgcluster.throwaway(settings=settings, replication=True, databases=["agentstate"]) as primary:
        with pgcluster.throwaway_replica(primary) as replica:
            assert setting(replica.url("agentstate"), "transaction_read_only") == "on"
            assert setting(replica.url(), "max_connections") == "42"  # the primary's settings
            pgcluster.cluster_stop(replica.data)
            assert pgcluster.cluster_start(replica.data) == replica
            assert setting(replica.url(), "port") == str(replica.port)
            deadline = time.monotonic() + 30
            while not streams(replica):
                assert time.monotonic() < deadline, "the restarted replica does not stream"
                time.sleep(0.1)
        assert not replica.data.exists()
        assert (setting(primary.url("agentstate"), "fsync"), setting(primary.url(), "timezone")) == ("off", "UTC")
    assert not primary.data.exists()


def test_the_command_line_starts_a_cluster_with_a_role_and_a_database_and_stops_and_removes_it():
    # As .ci/run does it: in a temporary directory the postgres user can reach when run as root.
    workdir = Path(tempfile.mkdtemp(prefix="agentstate-test-pgcluster-"))
    workdir.chmod(0o755)
    data, port = workdir / "pg", pgcluster.free_port()
    command = [sys.executable, "-m", "tools.pgcluster"]
    subprocess.run(
        [
            *command,
            "start",
            data,
            "--port",
            str(port),
            "--set",
            "work_mem=8MB",
            "--role",
            "reader",
            "--database",
            "app",
        ],
        cwd=ROOT,
        check=True,
    )
    try:
        with psycopg.connect(f"postgres://reader@127.0.0.1:{port}/app", connect_timeout=5) as conn:
            assert conn.execute("SELECT current_user, current_setting('work_mem')").fetchone() == ("reader", "8MB")
    finally:
        subprocess.run([*command, "stop", data, "--remove"], cwd=ROOT, check=True)
    assert not data.exists()
    workdir.rmdir()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(f"postgres://postgres@127.0.0.1:{port}/postgres", connect_timeout=2)


def test_with_password_auth_only_postgres_is_trusted_and_other_roles_need_a_pg_hba_line_and_their_password():
    """What .ci/multinode starts its primary with, so that the recipe's pg_hba lines and SCRAM
    passwords are what lets the app's role in (docs/SCALING.md, step 1)."""
    workdir = Path(tempfile.mkdtemp(prefix="agentstate-test-pgcluster-"))
    workdir.chmod(0o755)
    data = workdir / "pg"
    try:
        pgcluster.cluster_create(data, port=pgcluster.free_port(), password_auth=True)
        cluster = pgcluster.cluster_start(data)
        pgcluster.cluster_sql(cluster, "CREATE ROLE app LOGIN PASSWORD 'app-secret'")
        app = f"postgres://app:app-secret@127.0.0.1:{cluster.port}/postgres"
        with pytest.raises(psycopg.OperationalError, match=r"no pg_hba\.conf entry"):
            psycopg.connect(app, connect_timeout=5)
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write("host postgres app 127.0.0.1/32 scram-sha-256\n")
        pgcluster.cluster_sql(cluster, "SELECT pg_reload_conf()")
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(app.replace("app-secret", "wrong"), connect_timeout=5)
        with psycopg.connect(app, connect_timeout=5) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("app",)
        assert setting(cluster.url(), "port") == str(cluster.port)  # postgres: still trusted
    finally:
        pgcluster.cluster_stop(data)
        shutil.rmtree(workdir, ignore_errors=True)
