"""Losing a node of a pg_auto_failover pair under concurrent writers (docs/SCALING.md, "Failover").
The primary lost: the standby is promoted, the app servers reconnect through their multi-host
DATABASE_URL, and every write answered 2xx is there. The synchronous standby lost: writes answer
503 with Retry-After (never 2xx) until the monitor stops requiring a standby, /healthz says so, and
a retry of a refused write with its client ids stores it once."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

import httpx
import psycopg

from tests.failover.cluster import (
    APPS,
    client,
    monitor_nodes,
    needs_servers,
    node_lose,
    node_start,
    node_url,
    tenant_key,
    wait_for_states,
)

pytestmark = needs_servers
WRITERS = 6


@dataclass
class Writes:
    """What the writer threads were answered: every 2xx write's id and time, every refusal."""

    acknowledged_messages: dict[int, list[str]] = field(default_factory=dict)
    acknowledged_sessions: list[str] = field(default_factory=list)
    acknowledged_at: list[float] = field(default_factory=list)
    refused: list[tuple[int, str, str]] = field(default_factory=list)  # status (0: no answer), client id, body
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, key: str, stop: threading.Event) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._write, args=(key, t, stop)) for t in range(WRITERS)]
        for thread in threads:
            thread.start()
        return threads

    def _write(self, key: str, t: int, stop: threading.Event) -> None:
        """Thread ``t`` appends to its own session through one app server, and creates a session
        every fourth write, each write with ids of its own."""
        with client(key, APPS[t % 2]) as api:
            number = 0
            while not stop.is_set():
                number += 1
                ident = f"w{t}-{number}"
                try:
                    if number % 4:
                        path, body = f"/api/v1/users/u1/sessions/w{t}/messages/", {"client_id": ident, "content": ident}
                    else:
                        path, body = "/api/v1/sessions/", {"user_id": "u1", "session_id": ident}
                    answer = api.post(path, json=body)
                except httpx.HTTPError as exc:
                    with self.lock:
                        self.refused.append((0, ident, type(exc).__name__))
                    time.sleep(0.05)
                    continue
                with self.lock:
                    if answer.is_success:
                        self.acknowledged_at.append(time.monotonic())
                        if number % 4:
                            self.acknowledged_messages.setdefault(t, []).append(ident)
                        else:
                            self.acknowledged_sessions.append(ident)
                    else:
                        self.refused.append((answer.status_code, ident, answer.text[:300]))
                        assert answer.status_code != 503 or answer.headers["Retry-After"].isdigit()
                if not answer.is_success:
                    time.sleep(0.05)

    def longest_gap_after(self, moment: float) -> float:
        """The longest time without an acknowledged write, from ``moment`` on."""
        times = [moment, *sorted(at for at in self.acknowledged_at if at > moment)]
        return max(later - earlier for earlier, later in itertools.pairwise(times))


def stored_client_ids(api: httpx.Client, session: str) -> list[str]:
    ids, cursor = [], None
    while True:
        page = api.get(f"/api/v1/users/u1/sessions/{session}/messages/", params={"page_size": 500, "cursor": cursor})
        assert page.status_code == 200, page.text
        ids += [message["client_id"] for message in page.json()["results"]]
        if not page.json()["next"]:
            return ids
        cursor = httpx.URL(page.json()["next"]).params["cursor"]


def assert_every_acknowledged_write_is_stored(key: str, writes: Writes) -> None:
    with client(key, APPS[0]) as api:
        for t, acknowledged in writes.acknowledged_messages.items():
            stored = stored_client_ids(api, f"w{t}")
            assert len(stored) == len(set(stored)), "a message stored twice"
            assert set(acknowledged) <= set(stored), f"acknowledged, then lost: {set(acknowledged) - set(stored)}"
        for session in writes.acknowledged_sessions:
            assert api.get(f"/api/v1/users/u1/sessions/{session}/").status_code == 200, f"session {session} lost"


def primary_name() -> str:
    """The node the monitor made primary (alone, it is in wait_primary) and that says it is."""
    return next(
        name
        for name, (_, reported, goal) in monitor_nodes().items()
        if reported == goal and goal in {"primary", "wait_primary"}
    )


def writers_ready(key: str) -> None:
    with client(key, APPS[0]) as api:
        for t in range(WRITERS):
            assert api.post("/api/v1/sessions/", json={"user_id": "u1", "session_id": f"w{t}"}).status_code == 201


def test_losing_the_primary_under_concurrent_writers_loses_no_acknowledged_write():
    lost, standby = sorted(monitor_nodes(), key=lambda name: name != primary_name())
    wait_for_states({lost: "primary", standby: "secondary"})
    key = tenant_key()
    writers_ready(key)
    writes, stop = Writes(), threading.Event()
    threads = writes.run(key, stop)
    time.sleep(2)
    lost_at = time.monotonic()
    node_lose(lost)
    deadline = lost_at + 90
    # Until both app servers have written again for two seconds since the promotion.
    while not (
        monitor_nodes()[standby][1] in {"wait_primary", "primary"}
        and len([at for at in writes.acknowledged_at if at > time.monotonic() - 2]) >= 2 * WRITERS
        and writes.acknowledged_at[-1] - lost_at > 4
    ):
        assert time.monotonic() < deadline, f"no writes since the primary was lost: {monitor_nodes()}"
        time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    before = [at for at in writes.acknowledged_at if at <= lost_at]
    gap = writes.longest_gap_after(lost_at)
    print(  # noqa: T201 (the stage's log shows the measured outage: docs/SCALING.md)
        f"\nfailover: primary {lost} killed, {standby} promoted; {len(writes.acknowledged_at)} writes acknowledged "
        f"({len(before)} before the kill), {len(writes.refused)} refused; {gap:.1f} s without a successful write"
    )
    assert before and len(writes.acknowledged_at) > len(before)
    assert_every_acknowledged_write_is_stored(key, writes)
    with psycopg.connect(node_url(standby), connect_timeout=5) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is False


def test_losing_the_synchronous_standby_answers_writes_503_until_the_monitor_stops_waiting_for_it():
    """The standby (after the test above, the node it killed, started again) is lost."""
    primary = primary_name()
    (standby,) = set(monitor_nodes()) - {primary}
    if monitor_nodes()[standby][1:] != ("secondary", "secondary"):
        node_start(standby)
    wait_for_states({primary: "primary", standby: "secondary"}, timeout=120)
    with psycopg.connect(node_url(primary), connect_timeout=5) as conn:
        assert conn.execute("SHOW synchronous_standby_names").fetchone()[0]
    key = tenant_key()
    writers_ready(key)
    writes, stop = Writes(), threading.Event()
    threads = writes.run(key, stop)
    time.sleep(1)
    lost_at = time.monotonic()
    node_lose(standby)
    health_said = set()
    with httpx.Client(base_url=APPS[1], timeout=30) as probe:
        while time.monotonic() - lost_at < 60:
            health = probe.get("/healthz").json()
            health_said.add(health.get("synchronous_standby", "-").split(":")[0])
            if monitor_nodes()[primary][1] == "wait_primary" and writes.acknowledged_at[-1] - lost_at > 4:
                break
            time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    refused = [status for status, _, _ in writes.refused]
    gap = writes.longest_gap_after(lost_at)
    print(  # noqa: T201 (the stage's log shows what the clients saw: docs/SCALING.md)
        f"\nstandby {standby} lost: {refused.count(503)} writes answered 503, {len(writes.acknowledged_at)} "
        f"acknowledged; {gap:.1f} s without a successful write; /healthz said {sorted(health_said)}"
    )
    assert 503 in refused and set(refused) <= {503}, writes.refused[:5]
    assert "none connected" in health_said
    assert_every_acknowledged_write_is_stored(key, writes)
    # A refused message may be stored all the same (committed on the primary alone): its retry,
    # now that the primary no longer waits, stores it exactly once.
    with client(key, APPS[0]) as api:
        for _, ident, _ in writes.refused:
            t = int(ident[1:].split("-")[0])
            if int(ident.rsplit("-", 1)[1]) % 4:
                retried = api.post(
                    f"/api/v1/users/u1/sessions/w{t}/messages/", json={"client_id": ident, "content": ident}
                )
                assert retried.status_code in {200, 201}, retried.text
        for t in writes.acknowledged_messages:
            stored = stored_client_ids(api, f"w{t}")
            assert len(stored) == len(set(stored)), "a retried message stored twice"
