"""The test suite runs through PgBouncer in transaction mode (DATABASE_TRANSACTION_POOLING), as
docs/SCALING.md's deployments do, and drops its test database at the end: PgBouncer keeps its
server connections to that database after the tests close theirs (the root conftest.py ends them)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from tools import pgcluster

ROOT = Path(__file__).resolve().parent
A_DATABASE_TEST = "tests/sessions_app/test_services.py::test_create_strips_the_session_id_and_stores_the_fields"

pytestmark = [
    pytest.mark.servers,  # a PostgreSQL cluster, PgBouncer and a nested pytest
    pytest.mark.skipif(not shutil.which("pgbouncer"), reason="PgBouncer is not installed (apt-get install pgbouncer)"),
    pytest.mark.skipif(
        not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")), reason="PostgreSQL's server programs are missing"
    ),
]


def test_a_run_through_pgbouncer_drops_its_test_database():
    with pgcluster.throwaway() as cluster:
        workdir = Path(tempfile.mkdtemp(prefix="agentstate-test-pgbouncer-"))
        workdir.chmod(0o755)
        port = pgcluster.free_port()
        (workdir / "userlist.txt").write_text('"postgres" ""\n')
        (workdir / "pgbouncer.ini").write_text(
            f"[databases]\n* = host=127.0.0.1 port={cluster.port}\n[pgbouncer]\nlisten_addr = 127.0.0.1\n"
            f"listen_port = {port}\nunix_socket_dir =\nauth_type = trust\nauth_file = {workdir}/userlist.txt\n"
            "pool_mode = transaction\nignore_startup_parameters = extra_float_digits,options\n"
        )
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        bouncer = subprocess.Popen([*as_postgres, "pgbouncer", workdir / "pgbouncer.ini"], stderr=subprocess.DEVNULL)
        try:
            environ = {
                **os.environ,
                "DATABASE_URL": f"postgres://postgres@127.0.0.1:{port}/agentstate",
                "DATABASE_TRANSACTION_POOLING": "true",
            }
            environ.pop("REDIS_URL", None)
            run = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-n0",
                    "-p",
                    "no:randomly",
                    "-p",
                    "no:cacheprovider",
                    A_DATABASE_TEST,
                ],
                cwd=ROOT.parent,
                env=environ,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert run.returncode == 0, run.stdout[-3000:]
            assert "Error when trying to teardown test databases" not in run.stdout, run.stdout[-3000:]
            with psycopg.connect(cluster.url(), autocommit=True) as conn:
                names = {name for (name,) in conn.execute("SELECT datname FROM pg_database")}
            assert "test_agentstate" not in names
        finally:
            bouncer.terminate()
            bouncer.wait(timeout=10)
            shutil.rmtree(workdir, ignore_errors=True)
