"""Faults that used to hang requests until gunicorn killed them (issue 25, defects 3 and 4): a
replica host frozen under kept connections, and PgBouncer's pool held by slow transactions. Every
wait is bounded (docs/SCALING.md, "Every wait is bounded"): requests answer within a stated bound,
the proxy keeps its servers, and each test leaves everything as it found it."""

import threading
import time
from contextlib import suppress

import httpx
import psycopg
from django.conf import settings
from django.db import connection
from psycopg.conninfo import make_conninfo

from sessions_app import services
from tests.multinode.servers import (
    PRIMARY,
    PROXY,
    SESSIONS,
    client,
    in_threads,
    key_new,
    needs_servers,
    replica_frozen,
    replica_wait_replayed,
    session_ids,
    sql,
    tenant_new,
    tls,
)

pytestmark = needs_servers
# A listing while the replica is frozen: the replica's deadline on the kept connection, then the
# connect timeout of the new one Django's health check opens in its place, then the listing on the
# primary (about 5 s with the defaults); later ones wait only for the connect timeout.
FROZEN_LISTING_BOUND = settings.REPLICA_TIMEOUT_SECONDS + settings.DATABASE_CONNECT_TIMEOUT + 1.5
POOL_SIZE = 25  # .ci/multinode's PgBouncer: default_pool_size 20 + reserve_pool_size 5
BUSY_BOUND = 5  # a request that cannot get a pooled connection is answered within this


def test_a_frozen_replica_makes_listings_slower_never_a_502():
    tenant = tenant_new()
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    replica_wait_replayed()
    reader = client(key_new(tenant))
    # Every worker of both servers opens (and keeps) its connection to the replica.
    assert [session_ids(reader.get(SESSIONS)) for _ in range(12)] == [["s1"]] * 12

    with replica_frozen():
        services.session_create(tenant=tenant, user_id="u1", session_id="s2")
        took = []
        for _ in range(12):
            started = time.monotonic()
            listed = reader.get(SESSIONS)
            took.append(time.monotonic() - started)
            assert listed.status_code == 200, listed.text  # from the primary, never a 502
            assert sorted(session_ids(listed)) == ["s1", "s2"]
        assert max(took) < FROZEN_LISTING_BOUND, took
    # Thawed and caught up: its listings are served again.
    time.sleep(settings.REPLICA_CHECK_SECONDS + 0.2)
    assert sorted(session_ids(reader.get(SESSIONS))) == ["s1", "s2"]


def _bouncer_url() -> str:
    """The primary through PgBouncer, as the app servers reach it."""
    db = connection.settings_dict
    return make_conninfo(user=db["USER"], password=db["PASSWORD"], host=db["HOST"], port=db["PORT"], dbname=db["NAME"])


def _sleeping() -> int:
    (count,) = sql(PRIMARY, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(%%'")
    return count


def _cancel_sleepers() -> None:
    sql(PRIMARY, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(%%'")


def test_a_pool_held_by_slow_transactions_gives_503s_with_retry_after_not_an_outage():
    tenant = tenant_new()
    key = key_new(tenant)
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    url = _bouncer_url()

    def sleep_in_a_transaction(_: int) -> None:
        """Holds a pooled connection until cancelled (the test's end)."""
        with suppress(psycopg.errors.QueryCanceled), psycopg.connect(url, connect_timeout=5) as held:
            held.execute("SET LOCAL statement_timeout = 0")  # PgBouncer's connect_query gave the request bound
            held.execute("SELECT pg_sleep(120)")

    sleepers = [threading.Thread(target=sleep_in_a_transaction, args=(n,), daemon=True) for n in range(POOL_SIZE)]
    live_answers: list[int] = []
    stop_probing = threading.Event()

    def probe_livez() -> None:
        with httpx.Client(base_url=PROXY, timeout=30, verify=tls()) as proxy:
            while not stop_probing.is_set():
                live_answers.append(proxy.get("/livez").status_code)
                time.sleep(0.2)

    prober = threading.Thread(target=probe_livez, daemon=True)
    try:
        for sleeper in sleepers:
            sleeper.start()
        deadline = time.monotonic() + 10
        while _sleeping() < POOL_SIZE:
            assert time.monotonic() < deadline, "the sleepers did not take every pooled connection"
            time.sleep(0.1)
        prober.start()

        def append(t: int) -> list[tuple[int, float, httpx.Response]]:
            answers = []
            with client(key) as api:
                for n in range(3):
                    started = time.monotonic()
                    answer = api.post("/api/v1/users/u1/sessions/s1/messages/", json={"content": f"{t}-{n}"})
                    answers.append((answer.status_code, time.monotonic() - started, answer))
            return answers

        answers = [a for per_thread in in_threads(2, append) for a in per_thread]
        assert _sleeping() == POOL_SIZE  # still held throughout
        for status, took, answer in answers:
            assert status == 503, answer.text
            assert took < BUSY_BOUND, took
            assert answer.headers["Retry-After"] == "2"
            assert answer.json()["error"]["code"] == "unavailable"
        time.sleep(3)  # long enough for HAProxy (checks every second, down after 3 failures) to act
        stop_probing.set()
        prober.join()
        assert live_answers and set(live_answers) == {200}, live_answers  # a server was up throughout
    finally:
        stop_probing.set()
        _cancel_sleepers()
        for sleeper in sleepers:
            sleeper.join(timeout=15)
    # The pool free again: writes succeed.
    with client(key) as api:
        assert api.post("/api/v1/users/u1/sessions/s1/messages/", json={"content": "after"}).status_code == 201
