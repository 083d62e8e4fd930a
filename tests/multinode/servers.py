"""The servers .ci/multinode starts, as the multi-node tests reach them: the proxy over HTTPS (its
certificate self-signed by the recipe), each app server over HTTP as the proxy does, the primary and
the replica directly. Tests skip unless that script set them up."""

from __future__ import annotations

import os
import shutil
import signal
import ssl
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import psycopg
import pytest

from tools import pgcluster

PROXY = os.environ.get("AGENTSTATE_MULTINODE_PROXY", "")
PROXY_HTTP = os.environ.get("AGENTSTATE_MULTINODE_PROXY_HTTP", "")
CA = os.environ.get("AGENTSTATE_MULTINODE_CA", "")  # the proxy's self-signed certificate


def tls() -> ssl.SSLContext | bool:
    """What a client verifies the proxy's certificate with: the recipe's self-signed one."""
    return ssl.create_default_context(cafile=CA) if CA else True


APPS = [url for url in os.environ.get("AGENTSTATE_MULTINODE_APPS", "").split(",") if url]
PRIMARY = os.environ.get("AGENTSTATE_MULTINODE_PRIMARY", "")
PRIMARY_DATA = os.environ.get("AGENTSTATE_MULTINODE_PRIMARY_DATA", "")
REPLICA_DATA = os.environ.get("AGENTSTATE_MULTINODE_REPLICA_DATA", "")
REPLICA_PORT = os.environ.get("AGENTSTATE_MULTINODE_REPLICA_PORT", "")
REDIS_PID = os.environ.get("AGENTSTATE_MULTINODE_REDIS_PID", "")  # redis-server's pid file
REPLICA = PRIMARY.rsplit(":", 1)[0] + f":{REPLICA_PORT}/agentstate" if PRIMARY else ""

# Every multi-node test module's marks: skipped unless .ci/multinode set the servers up (it runs them
# one at a time: they stop and start the replica and an app server the others use).
needs_servers = [
    pytest.mark.skipif(
        not (PROXY and len(APPS) == 2 and PRIMARY and REPLICA_DATA),
        reason="multi-node tests run against the servers .ci/multinode starts (AGENTSTATE_MULTINODE_* unset)",
    ),
    pytest.mark.servers,
]
SESSIONS = "/api/v1/sessions/"


def tenant_new():
    """A tenant of its own for each test: the data is committed and outlives the test."""
    from agentstate.tenancy.services import tenant_get_or_create

    return tenant_get_or_create(slug=f"mn-{uuid.uuid4().hex[:12]}")


def key_new(tenant, scope: str = "agent") -> str:
    from agentstate.tenancy.services import api_key_create

    return api_key_create(tenant=tenant, name=scope, scope=scope)[1]


def client(key: str, base: str = PROXY) -> httpx.Client:
    """An API client through the proxy, or straight to an app server as the proxy reaches one: it
    says the client's request came over HTTPS (production settings redirect plain HTTP)."""
    headers = {"Authorization": f"Api-Key {key}"}
    if base != PROXY:
        headers["X-Forwarded-Proto"] = "https"
    return httpx.Client(base_url=base, headers=headers, timeout=30, verify=tls())


def session_ids(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [s["session_id"] for s in answer.json()["results"]]


def in_threads(count: int, work: Callable[[int], object]) -> list:
    """``work(i)`` in ``count`` threads released together; raises the first error."""
    from tests.threads import in_threads as threads_released_together

    results, errors = threads_released_together(count, work)
    if errors:
        raise errors[0]
    return results


# --- The replica ---------------------------------------------------------------------------


def sql(url: str, statement: str, params=()) -> tuple | None:
    """Run one statement in its own connection; its first row, if it returns rows."""
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        cursor = conn.execute(statement, params)
        return cursor.fetchone() if cursor.description else None


def replica_wait_replayed(timeout: float = 10) -> None:
    """Until the replica has replayed everything the primary committed so far."""
    (lsn,) = sql(PRIMARY, "SELECT pg_current_wal_lsn()")
    deadline = time.monotonic() + timeout
    while not sql(REPLICA, "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (str(lsn),))[0]:
        assert time.monotonic() < deadline, "the replica did not catch up"
        time.sleep(0.05)


def replica_stop() -> None:
    pgcluster.cluster_stop(Path(REPLICA_DATA))


def replica_start() -> None:
    """Start it again (its data directory keeps the settings .ci/multinode gave it) and wait until
    it streams again."""
    pgcluster.cluster_start(Path(REPLICA_DATA))
    deadline = time.monotonic() + 30
    while not sql(REPLICA, "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")[0]:
        assert time.monotonic() < deadline, "the replica did not stream again"
        time.sleep(0.1)
    replica_wait_replayed()


def replica_processes() -> list[int]:
    """The replica server's processes: its postmaster and every child (startup, WAL receiver,
    checkpointer, the backends serving the app servers' connections)."""
    postmaster = pgcluster.cluster_running(Path(REPLICA_DATA)).pid
    children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    return [postmaster, *map(int, children)]


@contextmanager
def replica_frozen() -> Iterator[None]:
    """Every process of the replica server stopped (SIGSTOP), as on a frozen host whose kernel
    still acknowledges what it is sent; continued (SIGCONT) on the way out, whatever happened, and
    caught up again before the next test."""
    stopped = replica_processes()
    try:
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        yield
    finally:
        for pid in stopped:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        replica_wait_replayed(timeout=30)


# --- Redis ---------------------------------------------------------------------------------


def redis_pid() -> int:
    return int(Path(REDIS_PID).read_text())


@contextmanager
def redis_frozen() -> Iterator[None]:
    """redis-server stopped (SIGSTOP), its kernel still accepting connections; continued on the way out."""
    pid = redis_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def redis_kill() -> None:
    pid = redis_pid()
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists():  # daemonized: not our child, so never a zombie of ours
        assert time.monotonic() < deadline, "redis-server did not die"
        time.sleep(0.05)


def redis_start() -> None:
    """Start redis-server as .ci/multinode does (same port, same command line) unless it runs, and
    wait until it answers."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1)
    with suppress(redis.RedisError):
        if client.ping():
            return
    work = Path(REDIS_PID).parent
    port = settings.REDIS_URL.rsplit(":", 1)[1].split("/")[0]
    program = shutil.which("redis-server")
    assert program, "redis-server is not installed"
    subprocess.run(
        [program, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
         "--maxmemory-policy", "noeviction", "--daemonize", "yes", "--pidfile", REDIS_PID,
         "--logfile", str(work / "redis.log")],
        check=True,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while True:
        with suppress(redis.RedisError):
            if client.ping():
                return
        assert time.monotonic() < deadline, "redis-server did not start again"
        time.sleep(0.05)
