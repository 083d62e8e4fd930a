"""The servers .ci/failover starts, as tests/failover reaches them: the app servers over HTTP, the
pg_auto_failover monitor and the nodes directly, and each node's keeper (pg_autoctl with its
PostgreSQL, in a process group of its own) to kill and start again. Tests skip unless that script
set them up."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest

APPS = [url for url in os.environ.get("AGENTSTATE_FAILOVER_APPS", "").split(",") if url]
MONITOR = os.environ.get("AGENTSTATE_FAILOVER_MONITOR", "")
WORK = Path(os.environ.get("AGENTSTATE_FAILOVER_WORK", "/nonexistent"))

needs_servers = [
    pytest.mark.skipif(
        not (len(APPS) == 2 and MONITOR and WORK.is_dir()),
        reason="failover tests run against the servers .ci/failover starts (AGENTSTATE_FAILOVER_* unset)",
    ),
    pytest.mark.servers,
    pytest.mark.xdist_group("failover"),  # they kill and restart the same nodes, one after another
]


def monitor_nodes() -> dict[str, tuple[int, str, str]]:
    """Each node's port and its reported and assigned states, as the monitor has them."""
    with psycopg.connect(MONITOR, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute("SELECT nodename, nodeport, reportedstate, goalstate FROM pgautofailover.node").fetchall()
    return {name: (port, reported, goal) for name, port, reported, goal in rows}


def wait_for_states(expected: dict[str, str], timeout: float = 60) -> None:
    """Until each named node reports the state it was assigned and it is the one expected."""
    deadline = time.monotonic() + timeout
    while True:
        nodes = monitor_nodes()
        if all(nodes[name][1] == nodes[name][2] == state for name, state in expected.items()):
            return
        assert time.monotonic() < deadline, f"states {nodes}, expected {expected}"
        time.sleep(0.2)


def node_url(name: str) -> str:
    return f"postgres://postgres@127.0.0.1:{monitor_nodes()[name][0]}/agentstate"


def node_lose(name: str) -> None:
    """The node's machine is gone: its keeper and its PostgreSQL killed at once (kill -9), so the
    keeper can neither restart PostgreSQL nor tell the monitor anything."""
    os.killpg(int((WORK / f"{name}.pid").read_text()), signal.SIGKILL)


def node_start(name: str) -> None:
    subprocess.run([WORK / "start-node", name], check=True)


def tenant_key() -> str:
    """An API key of a new tenant, made on the primary through the multi-host DATABASE_URL."""
    from django.db import connection

    from agentstate.tenancy.services import api_key_create, tenant_get_or_create

    connection.close()  # it may lead to a node an earlier test killed
    tenant = tenant_get_or_create(slug=f"fo-{uuid.uuid4().hex[:12]}")
    return api_key_create(tenant=tenant, name="agent", scope="agent")[1]


def client(key: str, base: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Api-Key {key}"}, timeout=30)
