"""Which database serves what (agentstate.db_router, docs/SCALING.md).

The replica here is a second connection to the test database, as Django's test mirror makes it:
it proves where each query goes, not replication (tests/multinode does that against a real,
lagging streaming replica). Tests commit, because a second connection never sees a test's
rolled-back transaction.
"""

import contextlib
import json
import socket
import subprocess
import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from agentstate.db_router import health, router
from agentstate.postgresql.base import PREPARE_ONLY_WHEN_ASKED
from agentstate.tenancy.services import api_key_create, tenant_get_or_create
from sessions_app import services
from sessions_app.models import Session
from tests.api.assertions import streamed
from tests.fresh_process import settings_process

pytestmark = pytest.mark.django_db(transaction=True)
REPLICA = "replica_test"  # the root conftest's replica fixture


def client_for(tenant, scope="agent") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name=scope, scope=scope)[1]}")
    return client


def where(call, *aliases):
    """Run ``call`` and return its result with the SQL each alias ran."""
    contexts = [CaptureQueriesContext(connections[a]) for a in aliases]
    for c in contexts:
        c.__enter__()
    try:
        result = call()
    finally:
        for c in contexts:
            c.__exit__(None, None, None)
    return result, *([q["sql"] for q in c.captured_queries] for c in contexts)


def mentions(queries, table: str) -> bool:
    return any(table in sql for sql in queries)


SESSIONS = "/api/v1/sessions/"
SESSION_TABLE = Session._meta.db_table


def test_a_session_listing_reads_the_replica_and_the_create_writes_the_primary(replica):
    tenant = tenant_get_or_create(slug="acme")
    writer, reader = client_for(tenant), client_for(tenant)

    created, on_primary, on_replica = where(
        lambda: writer.post(SESSIONS, {"user_id": "u1", "session_id": "s1"}, format="json"), "default", REPLICA
    )
    assert created.status_code == 201
    assert not mentions(on_replica, SESSION_TABLE) and any("INSERT" in q and SESSION_TABLE in q for q in on_primary)

    listed, on_primary, on_replica = where(lambda: reader.get(SESSIONS), "default", REPLICA)
    assert [s["session_id"] for s in listed.json()["results"]] == ["s1"]
    assert mentions(on_replica, SESSION_TABLE) and not mentions(on_primary, SESSION_TABLE)
    # The key itself was verified on the primary: a key created a moment ago may not be on a replica.
    assert not mentions(on_replica, "tenancy_apikey")


def test_a_round_listing_reads_the_replica(replica):
    tenant = tenant_get_or_create(slug="acme")
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"step": 1})
    listed, on_primary, on_replica = where(
        lambda: client_for(tenant).get("/api/v1/users/u1/sessions/s1/rounds/"), "default", REPLICA
    )
    assert [r["round_id"] for r in listed.json()["results"]] == [1]
    assert mentions(on_replica, "sessions_app_round") and not mentions(on_primary, "sessions_app_round")


def test_a_caller_that_wrote_lists_from_the_primary_until_its_window_ends(replica, settings):
    settings.READ_YOUR_WRITES_SECONDS = 1
    tenant = tenant_get_or_create(slug="acme")
    writer = client_for(tenant)
    assert writer.post(SESSIONS, {"user_id": "u1", "session_id": "s1"}, format="json").status_code == 201

    listed, on_primary, on_replica = where(lambda: writer.get(SESSIONS), "default", REPLICA)
    assert listed.json()["results"][0]["session_id"] == "s1"
    assert mentions(on_primary, SESSION_TABLE) and not mentions(on_replica, SESSION_TABLE)

    time.sleep(1.2)
    _, on_primary, on_replica = where(lambda: writer.get(SESSIONS), "default", REPLICA)
    assert mentions(on_replica, SESSION_TABLE) and not mentions(on_primary, SESSION_TABLE)


def test_a_failed_write_also_keeps_its_caller_on_the_primary(replica):
    """The marker follows the method, not the outcome: a 409 is usually followed by a re-read."""
    tenant = tenant_get_or_create(slug="acme")
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    caller = client_for(tenant)
    assert caller.post(SESSIONS, {"user_id": "u1", "session_id": "s1"}, format="json").status_code == 409
    _, on_replica = where(lambda: caller.get(SESSIONS), REPLICA)
    assert not mentions(on_replica, SESSION_TABLE)


def test_exports_and_the_erasure_preview_never_read_the_replica(replica, client):
    from tests.userdata_app.erasure_factories import verified_request

    tenant = tenant_get_or_create(slug="acme")
    services.session_create(tenant=tenant, user_id="alice", session_id="s1")
    exported, on_replica = where(
        lambda: client_for(tenant, "compliance").get("/api/v1/compliance/users/alice/export/"), REPLICA
    )
    assert exported.status_code == 200 and len(json.loads(streamed(exported))["subjects"][0]["sessions"]) == 1
    assert on_replica == []

    request = verified_request(subjects=[(tenant, "alice")], scope="everything")
    client.force_login(get_user_model().objects.create_superuser("officer", "o@example.com", "pw-for-tests-only"))
    for page in (f"{request.pk}/change/", f"{request.pk}/execute/", f"{request.pk}/export/", ""):
        shown, on_replica = where(lambda: client.get(f"/admin/userdata_app/erasurerequest/{page}"), REPLICA)  # noqa: B023 (called at once)
        assert shown.status_code == 200 and on_replica == [], page


def test_reads_inside_a_transaction_stay_on_the_primary(replica):
    tenant = tenant_get_or_create(slug="acme")
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    read = router.replica_reads(lambda: list(Session.objects.values_list("session_id", flat=True)))
    with transaction.atomic():
        (inside, on_replica) = where(read, REPLICA)
    assert inside == ["s1"] and on_replica == []
    outside, on_replica = where(read, REPLICA)
    assert outside == ["s1"] and mentions(on_replica, SESSION_TABLE)


def test_a_replica_that_is_down_is_skipped_without_an_error(dead_replica):
    tenant = tenant_get_or_create(slug="acme")
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    started = time.monotonic()
    listed = client_for(tenant).get(SESSIONS)
    assert listed.status_code == 200 and listed.json()["results"][0]["session_id"] == "s1"
    assert health.replica_is_healthy(dead_replica) is False  # the verdict is kept, not re-checked
    assert time.monotonic() - started < 5


def test_a_replica_that_fails_during_the_call_is_retried_on_the_primary(dead_replica):
    tenant = tenant_get_or_create(slug="acme")
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    health.mark_replica(dead_replica, health.ReplicaCheck(lag=0.0))  # it answered the last check, then went down
    listed = client_for(tenant).get(SESSIONS)
    assert listed.status_code == 200 and listed.json()["results"][0]["session_id"] == "s1"
    assert health.replica_is_healthy(dead_replica) is False


def test_a_replica_too_far_behind_is_skipped(replica, settings):
    settings.REPLICA_MAX_LAG_SECONDS = -1  # any lag, even none, is too much
    tenant = tenant_get_or_create(slug="acme")
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    listed, on_replica = where(lambda: client_for(tenant).get(SESSIONS), REPLICA)
    assert listed.json()["results"][0]["session_id"] == "s1"
    assert not mentions(on_replica, SESSION_TABLE)  # only the lag check ran there


def test_the_admin_changelist_reads_the_replica_and_its_actions_do_not(replica, client):
    tenant = tenant_get_or_create(slug="acme")
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    staff = get_user_model().objects.create_superuser("root", "root@example.com", "pw-for-tests-only")
    client.force_login(staff)
    url = "/admin/sessions_app/session/"
    page, on_replica = where(lambda: client.get(url), REPLICA)
    assert page.status_code == 200 and b"s1" in page.content
    assert mentions(on_replica, SESSION_TABLE)
    posted, on_replica = where(lambda: client.post(url, {"action": "", "index": 0}), REPLICA)
    assert posted.status_code in (200, 302) and on_replica == []


def test_without_replicas_everything_reads_the_primary(settings):
    settings.DATABASE_REPLICAS = []
    assert router.replica_for_read() is None


@pytest.mark.django_db
def test_statements_prepared_only_when_asked_and_never_for_a_transaction_pooler(postgres_only):
    """PgBouncer 1.18 in transaction mode cannot keep a server-side prepared statement: with
    ``DATABASE_TRANSACTION_POOLING`` a connection prepares nothing; otherwise only the hot
    statements agentstate asks for, never the ORM's by psycopg's count."""
    connection.ensure_connection()
    assert connection.connection.prepare_threshold == PREPARE_ONLY_WHEN_ASKED
    pooled = connection.copy()
    pooled.settings_dict["PREPARED_STATEMENTS"] = False
    try:
        pooled.ensure_connection()
        assert pooled.connection.prepare_threshold is None
    finally:
        pooled.close()


def _settings_of(**env: str) -> subprocess.CompletedProcess:
    return settings_process("'replicas': s.DATABASE_REPLICAS, 'databases': s.DATABASES", **env)


@pytest.mark.servers  # runs in a fresh process
def test_replica_urls_become_aliases_mirrored_in_tests_and_pooling_turns_server_side_cursors_off():
    result = _settings_of(
        DATABASE_URL="postgres://app@primary:6432/agentstate",
        DATABASE_TRANSACTION_POOLING="true",
        DATABASE_REPLICA_URLS="postgres://app@replica-a:5432/agentstate, postgres://app@replica-b:5432/agentstate",
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["replicas"] == ["replica1", "replica2"]
    second = found["databases"]["replica2"]
    assert second["HOST"] == "replica-b" and second["TEST"]["MIRROR"] == "default"
    assert second["OPTIONS"]["connect_timeout"] == 2
    assert all(found["databases"][a]["DISABLE_SERVER_SIDE_CURSORS"] for a in ("default", "replica1", "replica2"))


@pytest.mark.servers  # runs in a fresh process
def test_a_read_your_writes_window_shorter_than_lag_plus_check_is_refused():
    result = _settings_of(AGENTSTATE_READ_YOUR_WRITES_SECONDS="2", AGENTSTATE_REPLICA_MAX_LAG_SECONDS="2")
    assert result.returncode != 0 and "AGENTSTATE_READ_YOUR_WRITES_SECONDS must exceed" in result.stderr


@pytest.fixture
def cache_down(settings):
    """The shared cache (Redis) is gone: nothing listens where it was."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }


def test_without_the_cache_a_write_is_answered_and_reads_go_to_the_primary(replica, cache_down):
    """The read-your-writes mark cannot be recorded: the write, committed, still gets its 201 (a
    500 would make a client retry and store it twice), and every read goes to the primary, where
    no caller can miss its own write."""
    tenant = tenant_get_or_create(slug="acme")
    writer, reader = client_for(tenant), client_for(tenant)
    created = writer.post(SESSIONS, {"user_id": "u1", "session_id": "s1"}, format="json")
    assert created.status_code == 201 and Session.objects.filter(session_id="s1").count() == 1

    for caller in (writer, reader):
        listed, on_primary, on_replica = where(lambda caller=caller: caller.get(SESSIONS), "default", REPLICA)
        assert listed.status_code == 200 and [s["session_id"] for s in listed.json()["results"]] == ["s1"]
        assert mentions(on_primary, SESSION_TABLE) and not mentions(on_replica, SESSION_TABLE)


@pytest.mark.parametrize(
    "primary,replayed,last_commit_age,lag",
    [
        (
            "0/3000060",
            "0/3000060",
            120.0,
            0.0,
        ),  # reached the primary's position: caught up, however old its last commit
        ("0/3000060", "0/3000100", None, 0.0),  # past it (the primary moved on since it was read)
        ("1/0", "0/FFFFFFFF", 0.25, 0.25),  # short of it: lacks only what came after its last replayed commit
        ("0/3000060", "0/3000000", 30.0, 30.0),  # a stalled sender: nothing new arrives, its last commit ages
        ("0/3000060", "0/0", None, float("inf")),  # no WAL receiver, or never replayed a commit
    ],
)
def test_a_replicas_lag_is_measured_against_the_primary(primary, replayed, last_commit_age, lag):
    assert health.lag_behind(primary=primary, replayed=replayed, last_commit_age=last_commit_age) == lag


@pytest.mark.servers  # runs in a fresh process
def test_a_fractional_read_your_writes_window_is_accepted():
    result = _settings_of(AGENTSTATE_READ_YOUR_WRITES_SECONDS="3.5")
    assert result.returncode == 0, result.stderr


def test_a_skipped_replica_is_logged_once_and_shown_to_operators_by_the_health_probe(
    dead_replica, caplog, client, admin_client, settings
):
    """Reads go on without it, but operators see it: one warning when it starts being skipped (not
    one per check), and /healthz gives them its state and why, still 200 (the service serves). The
    load balancer's anonymous probe gets no details."""
    settings.REPLICA_CHECK_SECONDS = 0  # every listing checks it again
    tenant = tenant_get_or_create(slug="acme")
    with caplog.at_level("WARNING", logger="agentstate.db_router"):
        for _ in range(3):
            assert client_for(tenant).get(SESSIONS).status_code == 200
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skipped) == 1 and dead_replica in skipped[0]

    assert "replicas" not in client.get("/healthz").json()
    health = admin_client.get("/healthz")
    assert health.status_code == 200
    found = health.json()["replicas"][dead_replica]
    assert found["state"] == "skipped" and found["reason"].startswith("error: ") and found["lag_seconds"] is None


def _receiving(lag: float, received: int) -> health.ReplicaCheck:
    return health.ReplicaCheck(lag=lag, received=received, primary=received + 10)


def _silent(lag: float) -> health.ReplicaCheck:
    return health.ReplicaCheck(lag=lag, received=100, primary=200)  # the same position at every check


def _verdicts(checks: list[tuple[float, health.ReplicaCheck]]) -> list[str]:
    """The states a process finds for a replica checked at these times."""
    states, verdict = [], None
    for now, check in checks:
        verdict = health.verdict_after(verdict, check, now=now)
        states.append(verdict.state)
    return states


def test_a_replica_that_receives_no_wal_while_the_primary_moves_on_is_lost_past_the_bound(settings):
    """Its received position stops moving while it is behind (the primary removed the WAL it needs,
    or refuses it): skipped once too far behind, reported lost once the silence passed
    REPLICA_LOST_SECONDS, ok again once WAL arrives and it has caught up."""
    settings.REPLICA_LOST_SECONDS = 30
    checks = [(0, _receiving(0.0, 100)), (1, _silent(0.5)), (20, _silent(19.0)), (31, _silent(30.0))]
    assert _verdicts([*checks, (32, _receiving(0.0, 200))]) == ["ok", "ok", "skipped", "lost", "ok"]
    # A failed check (the replica restarting) does not restart the count.
    checks = [(0, _silent(1.0)), (10, health.ReplicaCheck(lag=None, error="OperationalError")), (30, _silent(5.0))]
    assert _verdicts(checks) == ["ok", "skipped", "lost"]


def test_a_replica_behind_but_receiving_or_with_all_the_wal_is_never_lost(settings):
    """WAL arriving at every check (a busy primary), or nothing left to receive (a quiet primary; a
    paused replay that has received everything): not lost, however long it lasts."""
    settings.REPLICA_LOST_SECONDS = 30
    busy = [(t, _receiving(0.5, 100 + t)) for t in range(0, 90, 10)]
    assert set(_verdicts(busy)) == {"ok"}
    paused = [(t, _receiving(5.0 + t, 100 + t)) for t in range(0, 90, 10)]
    assert set(_verdicts(paused)) == {"skipped"}
    assert _verdicts([(0, _silent(0.0)), (60, _silent(0.0))]) == ["ok", "ok"]
    paused_with_all = [(t, health.ReplicaCheck(lag=5.0 + t, received=200, primary=200)) for t in (0, 60)]
    assert _verdicts(paused_with_all) == ["skipped", "skipped"]


class _Process:
    """An app process as the router sees it: its own verdicts and monotonic clock, the wall clock
    shared with every other process, both moved on by ``at``."""

    def __init__(self, monkeypatch, *, monotonic_base: float) -> None:
        self.verdicts: dict[str, health.ReplicaVerdict] = {}
        self.monotonic_base, self.wall_base, self.elapsed = monotonic_base, time.time(), 0.0
        self.monkeypatch = monkeypatch

    def monotonic(self) -> float:
        return self.monotonic_base + self.elapsed

    def time(self) -> float:
        return self.wall_base + self.elapsed

    def check(self, alias: str, check: health.ReplicaCheck, *, at: float) -> health.ReplicaVerdict:
        self.elapsed = at
        self.monkeypatch.setattr(health, "time", self)
        self.monkeypatch.setattr(health, "_verdicts", self.verdicts)
        return health.mark_replica(alias, check)


def test_every_process_counts_a_replicas_silence_from_the_first_check_that_found_it(replica, settings, monkeypatch):
    """A worker that checks a silent replica later than another (or restarts) does not start a
    clock of its own: every process calls it lost at the same moment, with the same count."""
    settings.REPLICA_LOST_SECONDS = 30
    first, later = _Process(monkeypatch, monotonic_base=1000.0), _Process(monkeypatch, monotonic_base=5.0)
    assert first.check(replica, _silent(1.0), at=0).state == "ok"
    assert later.check(replica, _silent(20.0), at=20).state == "skipped"
    for process in (later, first):
        verdict = process.check(replica, _silent(31.0), at=31)
        assert verdict.state == "lost" and "no WAL received for 31 s" in verdict.reason
    # WAL arriving, seen by one process, restarts the count for all of them.
    assert later.check(replica, _receiving(0.5, 150), at=32).state == "ok"
    assert first.check(replica, health.ReplicaCheck(lag=5.0, received=150, primary=300), at=40).state == "skipped"
    assert later.check(replica, health.ReplicaCheck(lag=25.0, received=150, primary=300), at=60).state == "skipped"
    assert later.check(replica, health.ReplicaCheck(lag=31.0, received=150, primary=300), at=71).state == "lost"


def test_without_the_cache_each_process_counts_a_replicas_silence_from_its_own_checks(
    replica, cache_down, settings, monkeypatch, caplog
):
    """Redis gone: a silent replica is still found lost, by each process on its own clock (one
    that first checks it later calls it lost later), and operators are told why."""
    settings.REPLICA_LOST_SECONDS = 30
    first, later = _Process(monkeypatch, monotonic_base=1000.0), _Process(monkeypatch, monotonic_base=5.0)
    with caplog.at_level("WARNING", logger="agentstate.db_router"):
        first.check(replica, _silent(1.0), at=0)
        later.check(replica, _silent(20.0), at=20)
        assert first.check(replica, _silent(31.0), at=31).state == "lost"
        assert later.check(replica, _silent(31.0), at=31).state == "skipped"
        assert later.check(replica, _silent(50.0), at=50).state == "lost"
    assert any("replica silence cache unavailable" in r.getMessage() for r in caplog.records)


def test_a_lost_replica_is_logged_once_as_lost(replica, settings, caplog):
    settings.REPLICA_LOST_SECONDS = 0
    with caplog.at_level("WARNING", logger="agentstate.db_router"):
        for _ in range(3):
            health.mark_replica(replica, _silent(4.0))
    assert [r.getMessage() for r in caplog.records] == [
        f"replica {replica} lost, reads go to the primary until it is rebuilt "
        "(no WAL received for 0 s while the primary moved on (lag 4.0 s))"
    ]


class FreezableProxy:
    """A TCP proxy to the test database that can stop forwarding and keep its connections open:
    a frozen server as its clients see it (what they send is still acknowledged; nothing comes back)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.frozen = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while True:
            try:
                data = source.recv(65536)
                while self.frozen.is_set():
                    time.sleep(0.05)
                if not data:
                    return
                sink.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.frozen.clear()
        for sock in [self.listener, *self.sockets]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


@pytest.fixture
def frozen_replica(replica, postgres_only, settings):
    """The replica alias through a FreezableProxy (set ``.frozen`` to freeze it), with a 1 s deadline."""
    settings.REPLICA_TIMEOUT_SECONDS = 1
    db = connections["default"].settings_dict
    proxy = FreezableProxy(db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432))
    connections[REPLICA].close()
    connections[REPLICA].settings_dict.update(HOST="127.0.0.1", PORT=str(proxy.port))  # used at the next connect
    yield proxy
    connections[REPLICA].close()
    proxy.close()
    with connection.cursor() as cursor:  # the server ends the proxied sessions, then the test database can go
        for _ in range(50):
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            if not cursor.fetchone()[0]:
                break
            time.sleep(0.1)


def test_a_replica_that_stops_answering_on_a_kept_connection_is_given_up_after_its_deadline(frozen_replica, settings):
    """The listing's kept connection to the replica gets no answer (a stopped server, a frozen
    host): after AGENTSTATE_REPLICA_TIMEOUT the listing runs on the primary, and the replica is
    skipped until a check finds it answering again."""
    tenant = tenant_get_or_create(slug="acme")
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    reader = client_for(tenant)
    listed, on_replica = where(lambda: reader.get(SESSIONS), REPLICA)
    assert listed.status_code == 200 and mentions(on_replica, SESSION_TABLE)  # kept open now

    frozen_replica.frozen.set()
    started = time.monotonic()
    listed = reader.get(SESSIONS)
    took = time.monotonic() - started
    assert listed.status_code == 200 and [s["session_id"] for s in listed.json()["results"]] == ["s1"]
    assert 1 <= took < 3, took
    found = health.replica_verdicts(refresh=False)[REPLICA]
    assert (found.state, found.reason) == ("skipped", "error: no answer within 1 s")

    frozen_replica.frozen.clear()
    time.sleep(settings.REPLICA_CHECK_SECONDS)
    _, on_replica = where(lambda: reader.get(SESSIONS), REPLICA)
    assert mentions(on_replica, SESSION_TABLE)  # answering again: used again
