"""A commit whose wait for a synchronous standby is cancelled is committed on the primary alone, and
PostgreSQL tells the client only with a WARNING: the API must never answer it 2xx. On a throwaway
cluster that waits for a standby that does not exist, a write answers 503 with Retry-After once
its commit has waited AGENTSTATE_COMMIT_TIMEOUT_SECONDS, and is kept: its retry with the same
client id stores nothing twice. Needs PostgreSQL's server programs (Debian's postgresql package)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fresh_process import ENV_PREFIXES, ROOT
from tools import pgcluster

pytestmark = [
    pytest.mark.servers,  # starts a PostgreSQL cluster and a fresh process of the service
    pytest.mark.skipif(
        not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")), reason="PostgreSQL's server programs are missing"
    ),
]


def test_a_commit_no_standby_confirmed_is_answered_503_and_its_retry_stores_nothing_twice():
    with pgcluster.throwaway(settings={"lc_messages": "C"}, databases=["agentstate"]) as cluster:
        env = {key: value for key, value in os.environ.items() if not key.startswith(ENV_PREFIXES)}
        env |= {"DATABASE_URL": cluster.url("agentstate"), "DJANGO_LOG_LEVEL": "CRITICAL"}
        env["AGENTSTATE_COMMIT_TIMEOUT_SECONDS"] = "0.5"
        run = subprocess.run(
            [sys.executable, "-m", "tests.failover.unconfirmed_write"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.splitlines()[-1])
    for write in ("create", "append"):
        assert result[write]["status"] == 503, result[write]
        assert result[write]["retry_after"] == "5"
        assert result[write]["body"]["error"]["code"] == "unavailable"
    assert result["autocommit"] == "ReplicationUnconfirmed"
    assert result["health"]["synchronous_standby"].startswith("none connected")
    # Committed on the primary all the same: the retry finds the message and stores nothing.
    assert (result["retried"], result["history"]) == (200, ["hello"])
    assert "synchronous_standby" not in result["health_without_standby_names"]


def test_an_erasure_whose_commit_is_unconfirmed_or_cut_tells_the_operator_what_happened():
    """The operator is told the erasure may have committed and to check the request, never that it
    failed; the request's status stays as the database has it (executed: the commit was kept on the
    primary), never "failed"; a request whose own create is unconfirmed ends in a message, no traceback."""
    with pgcluster.throwaway(settings={"lc_messages": "C"}, databases=["agentstate"]) as cluster:
        env = {key: value for key, value in os.environ.items() if not key.startswith(ENV_PREFIXES)}
        env |= {"DATABASE_URL": cluster.url("agentstate"), "DJANGO_LOG_LEVEL": "CRITICAL"}
        env |= {"AGENTSTATE_COMMIT_TIMEOUT_SECONDS": "0.5", "AGENTSTATE_ERASURE_HMAC_KEYS": "k1:test-receipt-key"}
        run = subprocess.run(
            [sys.executable, "-m", "tests.failover.unconfirmed_erasure"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.splitlines()[-1])
    # (c) erase_user: its request's create unconfirmed -> a message (CommandError), nothing erased.
    assert result["create"].startswith(
        "CommandError: Nothing was erased: the commit was not confirmed by a synchronous"
    )
    assert "check the erasure requests" in result["create"] and result["create_after"]["data_left"] == 1
    # (a) the standby lost as the erasure commits, (b) the connection cut as it commits.
    for case, why in (
        ("execute", "the commit was not confirmed by a synchronous standby"),
        ("cut", "the database failed"),
    ):
        told, after = result[case], result[f"{case}_after"]
        assert told.startswith("ErasureUnconfirmed: Erasure request ") and why in told, told
        assert "may have committed" in told and "status" in told
        assert (after["status"], after["receipt"], after["data_left"]) == ("executed", True, 0), after
        assert "failed" not in after["events"], after
    # (d) an admin page: 503 with Retry-After and a plain page, as the API answers.
    assert (result["admin"]["status"], result["admin"]["retry_after"]) == (503, "5"), result["admin"]
    assert "Check whether it was kept before doing it again." in result["admin"]["page"]
