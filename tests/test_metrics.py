"""What operators see of the service itself: ``/metrics`` (Prometheus' text format) and the details of
``/healthz``, for a staff login or the operator token only; every metric listed in
docs/OPERATIONS.md; PgBouncer's pools read for real, within a bound even when PgBouncer hangs.
Counting across gunicorn's worker processes is tested against real servers (tests/multinode)."""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.db import connection
from django.http import JsonResponse
from django.test import RequestFactory
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from agentstate import pgbouncer
from agentstate.api.errors import error_body
from agentstate.middleware import RequestLogMiddleware
from agentstate.tenancy.services import api_key_create
from agentstate_site.metrics import REPLICA_STATES
from tools.pgcluster import free_port

TOKEN = "operator-token-for-tests-only-0123456789"
BEARER = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
DOC = Path(__file__).resolve().parents[1] / "docs" / "OPERATIONS.md"

pytestmark = pytest.mark.django_db(transaction=True)  # the replica fixture reads through a second connection


@pytest.fixture
def operator_token(settings) -> str:
    settings.OPERATOR_TOKEN = TOKEN
    return TOKEN


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape: (name, sorted labels) -> value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(**headers: str) -> str:
    answer = APIClient().get("/metrics", **headers)
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"].startswith("text/plain; version=0.0.4")
    return answer.content.decode()


def test_metrics_and_health_details_are_for_operators_only(client, tenant, replica, operator_token, django_user_model):
    """The load balancer's anonymous probe gets the verdict only; API keys (of any scope), a wrong
    token and a login that is not staff get no metrics; a staff login and the token get both."""
    refused = []
    for scope in ("agent", "compliance"):
        refused.append({"HTTP_AUTHORIZATION": f"Api-Key {api_key_create(tenant=tenant, name=scope, scope=scope)[1]}"})
    refused += [{}, {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}x"}, {"HTTP_AUTHORIZATION": TOKEN}]
    for headers in refused:
        answer = APIClient().get("/metrics", **headers)
        assert answer.status_code == 401 and answer["WWW-Authenticate"].startswith("Bearer"), headers
        health = APIClient().get("/healthz", **headers)
        assert health.status_code == 200 and "replicas" not in health.json(), headers

    member = APIClient()
    member.force_login(django_user_model.objects.create_user("member", is_staff=False))
    assert member.get("/metrics").status_code == 401 and "replicas" not in member.get("/healthz").json()

    staff = APIClient()
    staff.force_login(django_user_model.objects.create_user("ops", is_staff=True))
    for operator, headers in ((staff, {}), (APIClient(), BEARER)):
        assert operator.get("/metrics", **headers).status_code == 200
        assert operator.get("/healthz", **headers).json()["replicas"][replica]["state"] == "ok"


def test_without_the_token_configured_no_bearer_is_an_operator(client, settings):
    settings.OPERATOR_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401


def test_metrics_show_each_replica_its_lag_and_where_reads_went(tenant, replica, operator_token):
    """A listing is counted by the database that served it; the replica's state and lag are measured
    when the scrape asks."""
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name='r')[1]}")
    read_there = ("agentstate_replica_reads_total", (("database", replica),))
    before = samples(scrape(**BEARER)).get(read_there, 0.0)
    assert reader.get("/api/v1/sessions/").status_code == 200
    found = samples(scrape(**BEARER))
    assert found[read_there] == before + 1
    assert found[("agentstate_replica_lag_seconds", (("replica", replica),))] == 0.0
    assert found[("agentstate_replica_not_receiving_seconds", (("replica", replica),))] == 0.0
    states = {
        state: found[("agentstate_replica_state", (("replica", replica), ("state", state)))] for state in REPLICA_STATES
    }
    assert states == {"ok": 1.0, "skipped": 0.0, "lost": 0.0}


def test_a_replica_that_is_down_shows_as_skipped_with_no_lag(dead_replica, operator_token):
    found = samples(scrape(**BEARER))
    assert found[("agentstate_replica_state", (("replica", dead_replica), ("state", "skipped")))] == 1.0
    assert math.isnan(found[("agentstate_replica_lag_seconds", (("replica", dead_replica),))])


def test_a_503_in_the_error_shape_is_counted_by_its_code(operator_token):
    """What the service could not serve (a database connection not granted in time, ...) is
    counted; a probe's own 503, which is not in the error shape, is not."""
    key = ("agentstate_unavailable_responses_total", (("code", "database_unavailable"),))
    before = samples(scrape(**BEARER)).get(key, 0.0)
    for body in (error_body("database_unavailable", "Try again."), {"status": "error", "database": "error: X"}):
        middleware = RequestLogMiddleware(lambda request, body=body: JsonResponse(body, status=503))
        assert middleware(RequestFactory().get("/api/v1/sessions/")).status_code == 503
    assert samples(scrape(**BEARER))[key] == before + 1


def documented_metrics() -> dict[str, tuple[str, set[str]]]:
    """docs/OPERATIONS.md's table of metrics: name -> (type, labels)."""
    rows = re.findall(r"^\| `(agentstate_[a-z_]+)` \| (\w+) \|([^|]*)\|", DOC.read_text(), re.MULTILINE)
    return {name: (kind, set(re.findall(r"`(\w+)`", labels))) for name, kind, labels in rows}


def test_every_metric_is_listed_in_operations_md_with_its_type_and_labels(replica, operator_token, settings):
    settings.PGBOUNCER_ADMIN_URL = "postgres://nobody@127.0.0.1:1/pgbouncer"  # configured, not answering
    text = scrape(**BEARER)
    exposed = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    documented = documented_metrics()
    assert {name: kind for name, (kind, _) in documented.items()} == exposed
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert set(sample.labels) == documented[sample.name][1], sample.name


# --- PgBouncer, for real (PostgreSQL only) ----------------------------------------------------


def _as_postgres() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@pytest.fixture
def bouncer(settings, postgres_only) -> Iterator[tuple[str, int]]:
    """PgBouncer in transaction mode in front of the test database, one server connection per
    pool, its admin console open to postgres as a stats user and configured for the app; yields
    the URL the app's database has through it and PgBouncer's process id."""
    if not shutil.which("pgbouncer"):
        pytest.skip("needs pgbouncer (apt-get install pgbouncer)")
    work = Path(tempfile.mkdtemp(prefix="agentstate-pgbouncer-"))
    db = connection.settings_dict
    port = free_port()
    (work / "userlist.txt").write_text(f'"{db["USER"]}" ""\n')
    (work / "pgbouncer.ini").write_text(
        f"[databases]\n{db['NAME']} = host={db['HOST'] or '127.0.0.1'} port={db['PORT'] or 5432} dbname={db['NAME']}\n"
        f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\nauth_type = trust\n"
        f"auth_file = {work}/userlist.txt\npool_mode = transaction\ndefault_pool_size = 1\n"
        f"stats_users = {db['USER']}\nlogfile = {work}/pgbouncer.log\npidfile = {work}/pgbouncer.pid\n"
    )
    if os.geteuid() == 0:
        shutil.chown(work, "postgres", "postgres")
        for path in work.iterdir():
            shutil.chown(path, "postgres", "postgres")
    subprocess.run([*_as_postgres(), "pgbouncer", "-d", str(work / "pgbouncer.ini")], check=True)
    try:
        for _ in range(100):
            if (work / "pgbouncer.pid").exists():
                break
            time.sleep(0.05)
        pid = int((work / "pgbouncer.pid").read_text())
        settings.PGBOUNCER_ADMIN_URL = f"postgres://{db['USER']}@127.0.0.1:{port}/pgbouncer"
        yield f"postgres://{db['USER']}@127.0.0.1:{port}/{db['NAME']}", pid
    finally:
        if (work / "pgbouncer.pid").exists():
            pid = int((work / "pgbouncer.pid").read_text())
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.servers
def test_a_full_pool_shows_its_waiting_clients_in_metrics_and_health(bouncer, operator_token):
    """One transaction holds the pool's only server connection: the next client waits, and an
    operator sees it waiting, and for how long."""
    url, _ = bouncer
    with psycopg.connect(url) as holder:
        holder.execute("SELECT 1")  # a transaction open on the only server connection
        waiter_done = threading.Event()

        def wait_for_a_connection() -> None:
            with psycopg.connect(url, autocommit=True) as waiter:
                waiter.execute("SELECT 1")
            waiter_done.set()

        threading.Thread(target=wait_for_a_connection, daemon=True).start()
        time.sleep(1.2)
        found = samples(scrape(**BEARER))
        pool = APIClient().get("/healthz", **BEARER).json()["pool"]
        holder.rollback()
    assert waiter_done.wait(5)
    user = (("user", connection.settings_dict["USER"]),)
    assert found[("agentstate_pgbouncer_up", ())] == 1.0
    assert found[("agentstate_pgbouncer_clients_waiting", user)] == 1.0
    assert found[("agentstate_pgbouncer_clients_active", user)] == 1.0
    assert found[("agentstate_pgbouncer_servers_active", user)] == 1.0
    assert found[("agentstate_pgbouncer_max_wait_seconds", user)] >= 1.0
    assert pool["pgbouncer"] == "ok" and pool["pools"][0]["clients_waiting"] == 1


@pytest.mark.servers
def test_a_hung_pgbouncer_is_reported_within_the_bound_and_never_piles_up_reads(bouncer, operator_token):
    """PgBouncer stopped (SIGSTOP: its port still accepts, nothing answers): a scrape answers within
    READ_SECONDS saying so, and the next does not start a second read while the first waits."""
    _, pid = bouncer
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        found = samples(scrape(**BEARER))
        assert time.monotonic() - started < pgbouncer.READ_SECONDS + 1
        assert found[("agentstate_pgbouncer_up", ())] == 0.0
        assert APIClient().get("/healthz", **BEARER).json()["pool"] == {
            "pgbouncer": "error: an earlier read is still waiting"
        }
    finally:
        os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 10
    while (reading := pgbouncer.pool_read()) is not None and reading.error:  # the stuck read ends, reads resume
        assert time.monotonic() < deadline, reading.error
        time.sleep(0.2)
