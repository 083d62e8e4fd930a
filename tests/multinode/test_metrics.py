"""What operators see on the real servers: /metrics counts for the whole server whichever of its
gunicorn workers answers, a stalled replica's lag shows in /metrics and /healthz, and a replica
whose WAL the primary removed (no slot, no archive: as this stage runs it) is reported lost rather
than skipped in silence, then rebuilt for the tests after it."""

import os
import re
import signal
import time
from pathlib import Path

import httpx
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from sessions_app import services
from tests.multinode.servers import (
    APPS,
    PRIMARY,
    REPLICA,
    REPLICA_DATA,
    REPLICA_PORT,
    SESSIONS,
    client,
    in_threads,
    key_new,
    needs_servers,
    replica_start,
    replica_wait_replayed,
    session_ids,
    sql,
    tenant_new,
)
from tools import pgcluster

pytestmark = needs_servers
OPERATOR = {"Authorization": f"Bearer {os.environ.get('AGENTSTATE_OPERATOR_TOKEN', '')}"}
REPLICA_ALIAS = "replica1"


def scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = httpx.get(base + "/metrics", headers=OPERATOR, timeout=30)
    assert answer.status_code == 200, answer.text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }


def replica_details(base: str) -> dict:
    answer = httpx.get(base + "/healthz", headers=OPERATOR, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["replicas"][REPLICA_ALIAS]


def state(found: dict, name: str) -> float:
    return found[("agentstate_replica_state", (("replica", REPLICA_ALIAS), ("state", name)))]


def lag(found: dict) -> float:
    return found[("agentstate_replica_lag_seconds", (("replica", REPLICA_ALIAS),))]


def reads(found: dict) -> float:
    return sum(v for (name, _), v in found.items() if name == "agentstate_replica_reads_total")


def test_a_servers_counters_are_the_same_whichever_worker_answers():
    """Listings sent at once to one server spread over its two workers; every scrape of it, from
    whichever worker, then counts all of them (each worker alone would count its own share)."""
    app = APPS[0]
    assert httpx.get(app + "/metrics", timeout=30).status_code == 401
    key = key_new(tenant_new())
    before = {reads(scrape(app)) for _ in range(6)}
    assert len(before) == 1, before

    def list_sessions(_: int) -> None:
        with client(key, app) as api:
            for _ in range(5):
                assert api.get(SESSIONS).status_code == 200

    in_threads(4, list_sessions)
    after = [reads(scrape(app)) for _ in range(10)]
    assert after == [before.pop() + 20] * 10
    pools = scrape(app)
    assert pools[("agentstate_pgbouncer_up", ())] == 1.0
    assert pools[("agentstate_pgbouncer_clients_waiting", (("user", "agentstate"),))] == 0.0


def test_a_stalled_replica_shows_its_lag_in_metrics_and_health_details():
    """Its sender stopped, the replica receives nothing and by itself looks caught up; measured
    against the primary its lag grows past the bound, and operators see it skipped on both servers."""
    replica_wait_replayed()
    (sender,) = sql(PRIMARY, "SELECT pid FROM pg_stat_replication LIMIT 1")
    os.kill(sender, signal.SIGSTOP)
    try:
        services.session_create(tenant=tenant_new(), user_id="u1", session_id="unseen")
        time.sleep(settings.REPLICA_MAX_LAG_SECONDS + settings.REPLICA_CHECK_SECONDS + 0.5)
        for app in APPS:
            found = scrape(app)
            assert state(found, "skipped") == 1.0 and lag(found) > settings.REPLICA_MAX_LAG_SECONDS
            details = replica_details(app)
            assert details["state"] == "skipped" and details["lag_seconds"] > settings.REPLICA_MAX_LAG_SECONDS
    finally:
        os.kill(sender, signal.SIGCONT)
        replica_wait_replayed()
    replica_in_use_again()


def replica_in_use_again() -> None:
    """Until every server's next check finds the replica ok again."""
    deadline = time.monotonic() + 10
    while not all(state(scrape(app), "ok") == 1.0 for app in APPS):
        assert time.monotonic() < deadline, [replica_details(app) for app in APPS]
        time.sleep(0.5)


def _primary_removes_the_wal_after(lsn: str) -> None:
    """Switch to new WAL files and checkpoint until the file holding ``lsn`` is gone from the
    primary. The replica's slot (docs/SCALING.md, step 3) would keep it: its bound,
    max_slot_wal_keep_size, is lowered to 1 MB, so the primary invalidates the slot as it would past
    the recipe's 10 GB."""
    sql(PRIMARY, "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'")
    sql(PRIMARY, "SELECT pg_reload_conf()")
    (segment,) = sql(PRIMARY, "SELECT pg_walfile_name(%s::pg_lsn)", (lsn,))
    for _ in range(20):
        sql(PRIMARY, "CREATE TABLE IF NOT EXISTS wal_filler (n int)")
        sql(PRIMARY, "INSERT INTO wal_filler VALUES (1)")
        sql(PRIMARY, "SELECT pg_switch_wal()")
        sql(PRIMARY, "CHECKPOINT")
        if not sql(PRIMARY, "SELECT count(*) FROM pg_ls_waldir() WHERE name = %s", (segment,))[0]:
            return
    raise AssertionError(f"the primary kept {segment}")


def _slot_bound_restored(bound: str) -> None:
    """The recipe's bound back, and the invalidated slot dropped (the rebuilt replica has none)."""
    sql(PRIMARY, f"ALTER SYSTEM SET max_slot_wal_keep_size = '{bound}'")
    sql(PRIMARY, "SELECT pg_reload_conf()")
    sql(
        PRIMARY, "SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots WHERE wal_status = 'lost'"
    )


def test_a_replica_that_lost_its_wal_is_reported_lost_and_reads_go_to_the_primary():
    tenant = tenant_new()
    reader = client(key_new(tenant))
    replica_wait_replayed()
    (replayed,) = sql(REPLICA, "SELECT pg_last_wal_replay_lsn()::text")
    (bound,) = sql(PRIMARY, "SHOW max_slot_wal_keep_size")
    pgcluster.cluster_stop(Path(REPLICA_DATA))
    try:
        _primary_removes_the_wal_after(replayed)
        services.session_create(tenant=tenant, user_id="u1", session_id="after-the-loss")
        pgcluster.cluster_start(Path(REPLICA_DATA))  # in recovery, asking for WAL the primary no longer has
        started = time.monotonic()
        while not any(replica_details(app)["state"] == "lost" for app in APPS):
            assert time.monotonic() - started < settings.REPLICA_LOST_SECONDS + 20, [replica_details(a) for a in APPS]
            time.sleep(0.5)
        # The silence counts from the first check of any process (the shared cache holds its start):
        # once every worker's verdict is newer than that first "lost", all of them say lost, and
        # count the same silence but for the age of their last check.
        time.sleep(settings.REPLICA_CHECK_SECONDS + 0.5)
        details = [replica_details(app) for app in APPS for _ in range(8)]
        assert all(found["state"] == "lost" for found in details), details
        assert all(state(scrape(app), "lost") == 1.0 for app in APPS for _ in range(8))
        silences = [int(re.search(r"no WAL received for (\d+) s", found["reason"])[1]) for found in details]
        assert max(silences) - min(silences) <= settings.REPLICA_CHECK_SECONDS + 2, details
        assert sql(REPLICA, "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")[0] == 0
        assert [session_ids(reader.get(SESSIONS)) for _ in range(4)] == [["after-the-loss"]] * 4
    finally:
        _slot_bound_restored(bound)
        replica_rebuild()


def replica_rebuild() -> None:
    """A fresh pg_basebackup of the primary in the replica's place (same port, same socket
    directory), streaming again before the next test."""
    data = Path(REPLICA_DATA)
    pgcluster.cluster_stop(data, remove=True)
    primary_port = int(PRIMARY.rsplit(":", 1)[1].split("/")[0])
    pgcluster.replica_create(
        pgcluster.Cluster(data=data.parent / "primary", port=primary_port),
        data,
        port=int(REPLICA_PORT),
        socket_dir=data.parent,
    )
    replica_start()
    replica_in_use_again()
