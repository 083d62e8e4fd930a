"""Reads against a real streaming replica, made to lag by pausing its replay: listings read the
replica, a caller that just wrote reads the primary, a replica too far behind or down is skipped,
and what erasure and export rely on never comes from the replica."""

import os
import signal
import time

import pytest
from django.conf import settings

from sessions_app import services
from sessions_app.models import Session
from tests.multinode.servers import (
    PRIMARY,
    REPLICA,
    SESSIONS,
    client,
    key_new,
    needs_servers,
    replica_start,
    replica_stop,
    replica_wait_replayed,
    session_ids,
    sql,
    tenant_new,
)

pytestmark = needs_servers


@pytest.fixture
def paused_replica():
    """The replica, caught up, then with its replay paused: it receives WAL and applies none."""
    replica_wait_replayed()
    sql(REPLICA, "SELECT pg_wal_replay_pause()")
    try:
        yield time.monotonic()
    finally:
        sql(REPLICA, "SELECT pg_wal_replay_resume()")
        replica_wait_replayed()


def test_the_replica_streams_the_primarys_commits():
    tenant = tenant_new()
    services.session_create(tenant=tenant, user_id="u1", session_id="streamed")
    replica_wait_replayed()
    assert sql(REPLICA, "SELECT count(*) FROM sessions_app_session WHERE tenant_id = %s", (tenant.pk,))[0] == 1
    assert sql(REPLICA, "SELECT pg_is_in_recovery()")[0] is True


def test_on_a_lagging_replica_the_writer_reads_its_write_others_read_lag_until_it_is_too_far_behind():
    tenant = tenant_new()
    writer, reader = client(key_new(tenant)), client(key_new(tenant))
    assert writer.post(SESSIONS, json={"user_id": "u1", "session_id": "before"}).status_code == 201
    replica_wait_replayed()
    sql(REPLICA, "SELECT pg_wal_replay_pause()")
    try:
        paused = time.monotonic()
        assert writer.post(SESSIONS, json={"user_id": "u1", "session_id": "during"}).status_code == 201
        # The writer wrote in the last AGENTSTATE_READ_YOUR_WRITES_SECONDS: the primary answers.
        assert sorted(session_ids(writer.get(SESSIONS))) == ["before", "during"]
        # Another caller's listing tolerates lag: the replica answers, without the new session.
        assert [session_ids(reader.get(SESSIONS)) for _ in range(4)] == [["before"]] * 4
        assert time.monotonic() - paused < settings.REPLICA_MAX_LAG_SECONDS  # still within the lag allowed
        # Past the lag allowed (and the checks' interval) every server skips the replica.
        time.sleep(settings.REPLICA_MAX_LAG_SECONDS + settings.REPLICA_CHECK_SECONDS + 0.5)
        assert [sorted(session_ids(reader.get(SESSIONS))) for _ in range(4)] == [["before", "during"]] * 4
    finally:
        sql(REPLICA, "SELECT pg_wal_replay_resume()")
        replica_wait_replayed()
    # Caught up again: the reader is back on the replica and sees both.
    time.sleep(settings.REPLICA_CHECK_SECONDS + 0.2)
    assert sorted(session_ids(reader.get(SESSIONS))) == ["before", "during"]


def test_export_reads_the_primary_while_the_replica_lags(paused_replica):
    tenant = tenant_new()
    services.session_create(tenant=tenant, user_id="alice", session_id="s1")
    services.round_save(tenant=tenant, user_id="alice", session_id="s1", state={"step": 1})
    with client(key_new(tenant, "compliance")) as officer:
        exported = officer.get("/api/v1/compliance/users/alice/export/")
    assert exported.status_code == 200, exported.text
    [subject] = exported.json()["subjects"]
    assert [s["session_id"] for s in subject["sessions"]] == ["s1"] and len(subject["sessions"][0]["rounds"]) == 1


def test_a_key_created_while_the_replica_lags_works_at_once(paused_replica):
    """Authentication reads the primary: the key is not on the replica yet."""
    tenant = tenant_new()
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    with client(key_new(tenant)) as api:
        assert api.get(SESSIONS).status_code == 200
        assert api.get("/api/v1/users/u1/sessions/s1/").status_code == 200


def test_a_replica_that_is_down_is_skipped_without_an_error():
    tenant = tenant_new()
    reader = client(key_new(tenant))
    assert session_ids(reader.get(SESSIONS)) == []
    replica_stop()
    try:
        services.session_create(tenant=tenant, user_id="u1", session_id="while-down")
        started = time.monotonic()
        assert [session_ids(reader.get(SESSIONS)) for _ in range(6)] == [["while-down"]] * 6
        assert time.monotonic() - started < 5
    finally:
        replica_start()


def test_the_lag_check_needs_no_monitoring_privilege():
    """The app's database role (docs/SCALING.md's recipe: no superuser, no monitoring role) still
    sees the replica's receiver, through the connections the app servers use."""
    from django.db import connections

    from agentstate.db_router.health import _PRIMARY_POSITION_SQL, _REPLAYED_SQL, wal_position

    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT rolsuper OR pg_has_role(rolname, 'pg_monitor', 'MEMBER') FROM pg_roles WHERE rolname = current_user"
        )
        assert cursor.fetchone()[0] is False
        cursor.execute(_PRIMARY_POSITION_SQL)
        (primary,) = cursor.fetchone()
    replica_wait_replayed()
    with connections["replica1"].cursor() as cursor:
        cursor.execute(_REPLAYED_SQL)
        replayed, _, received = cursor.fetchone()
    # the receiver is seen: not "0/0"
    assert wal_position(replayed) >= wal_position(primary) > 0 and wal_position(received) >= wal_position(primary)


def test_a_stalled_sender_counts_as_lag_and_no_listing_is_older_than_the_bound():
    """The replica stays connected but receives nothing (its sender on the primary is stopped), so
    by itself it looks caught up. Measured against the primary it is behind: once the bound has
    passed, every listing comes from the primary, even another caller's; an erased person's data
    is not shown after the erasure."""
    tenant = tenant_new()
    writer, reader = client(key_new(tenant)), client(key_new(tenant))
    assert writer.post(SESSIONS, json={"user_id": "gone", "session_id": "theirs"}).status_code == 201
    replica_wait_replayed()
    (sender,) = sql(PRIMARY, "SELECT pid FROM pg_stat_replication LIMIT 1")
    os.kill(sender, signal.SIGSTOP)
    try:
        stalled = time.monotonic()
        services.session_create(tenant=tenant, user_id="u1", session_id="during")
        Session.objects.filter(tenant=tenant, user_id="gone").delete()  # as an erasure deletes it
        time.sleep(settings.REPLICA_MAX_LAG_SECONDS + settings.REPLICA_CHECK_SECONDS + 0.5)
        for _ in range(6):  # every app server, whatever its last check said
            assert sorted(session_ids(reader.get(SESSIONS))) == ["during"]
        assert time.monotonic() - stalled < 30
    finally:
        os.kill(sender, signal.SIGCONT)
        replica_wait_replayed()
