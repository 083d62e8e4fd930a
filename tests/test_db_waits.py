"""Every wait on the database is bounded (docs/SCALING.md, "Every wait is bounded"): the timeouts
each connection carries, what a request that runs out of one answers (503 with Retry-After, never a
500), and the long jobs' own timeouts (docs/OPERATIONS.md, "Long jobs")."""

import json
import re

import psycopg
import pytest
from django.core.management import get_commands, load_command_class
from django.db import connection, transaction

from agentstate.db_waits import JobCommand, job_timeouts
from sessions_app import services
from tests.fresh_process import ROOT, settings_process
from tools.recipe import recipe_steps


def _shown(name: str) -> float:
    """A setting of the app's own connection, as ``SHOW`` gives it, in seconds."""
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        shown = cursor.fetchone()[0]
        cursor.execute("SELECT EXTRACT(EPOCH FROM %s::interval)", [shown if shown != "0" else "0s"])
        return float(cursor.fetchone()[0])


@pytest.mark.django_db
def test_the_apps_postgresql_connection_carries_the_statement_lock_and_idle_timeouts(postgres_only, settings):
    assert _shown("statement_timeout") == settings.DATABASE_STATEMENT_TIMEOUT
    assert _shown("lock_timeout") == settings.DATABASE_LOCK_TIMEOUT
    assert _shown("idle_in_transaction_session_timeout") == settings.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT
    assert settings.DATABASE_LOCK_TIMEOUT < settings.DATABASE_STATEMENT_TIMEOUT < 30  # gunicorn's timeout


def _databases(**env: str) -> dict:
    result = settings_process("'databases': s.DATABASES", **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["databases"]


@pytest.mark.servers  # runs in a fresh process
def test_primary_and_replica_connections_get_every_bound_and_each_is_overridable():
    urls = {
        "DATABASE_URL": "postgres://app@db:5432/agentstate",
        "DATABASE_REPLICA_URLS": "postgres://app@r:5432/agentstate",
    }
    defaults = _databases(**urls)
    for alias in ("default", "replica1"):
        assert defaults[alias]["OPTIONS"] == {
            "connect_timeout": 2,
            "keepalives": 1,
            "keepalives_idle": 3,
            "keepalives_interval": 1,
            "keepalives_count": 3,
            "tcp_user_timeout": 6000,
            "options": "-c statement_timeout=10000 -c lock_timeout=5000 -c idle_in_transaction_session_timeout=8000",
        }
    changed = _databases(
        **urls,
        DATABASE_STATEMENT_TIMEOUT="4.5",
        DATABASE_LOCK_TIMEOUT="1",
        DATABASE_IDLE_IN_TRANSACTION_TIMEOUT="3",
        DATABASE_CONNECT_TIMEOUT="5",
        DATABASE_KEEPALIVES_IDLE="10",
        DATABASE_KEEPALIVES_INTERVAL="2",
        DATABASE_KEEPALIVES_COUNT="4",
        DATABASE_TCP_USER_TIMEOUT="9",
    )["default"]["OPTIONS"]
    assert changed["options"] == (
        "-c statement_timeout=4500 -c lock_timeout=1000 -c idle_in_transaction_session_timeout=3000"
    )
    assert (changed["connect_timeout"], changed["keepalives_idle"], changed["keepalives_interval"]) == (5, 10, 2)
    assert (changed["keepalives_count"], changed["tcp_user_timeout"]) == (4, 9000)
    # What the URL itself says wins.
    named = _databases(DATABASE_URL="postgres://app@db:5432/agentstate?connect_timeout=7")["default"]["OPTIONS"]
    assert named["connect_timeout"] == 7 and named["tcp_user_timeout"] == 6000


@pytest.fixture
def short_lock_timeout(postgres_only):
    """The app's connection with a lock timeout of 0.3 s (reconnected), so a test waits no longer."""
    options = connection.settings_dict["OPTIONS"]
    saved = options["options"]
    options["options"] = " ".join(
        "lock_timeout=300" if part.startswith("lock_timeout=") else part for part in saved.split(" ")
    )
    connection.close()
    yield
    options["options"] = saved
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_request_that_runs_out_of_its_lock_wait_answers_503_with_retry_after(short_lock_timeout, tenant, api):
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    settings_dict = connection.settings_dict
    holder = psycopg.connect(
        host=settings_dict["HOST"] or "localhost",
        port=settings_dict["PORT"] or 5432,
        user=settings_dict["USER"],
        password=settings_dict["PASSWORD"] or None,
        dbname=settings_dict["NAME"],
    )
    try:
        holder.execute("SELECT 1 FROM sessions_app_session WHERE session_id = 's1' FOR UPDATE")  # held, not committed
        answer = api.post("/api/v1/users/u1/sessions/s1/messages/", {"content": "hi"}, format="json")
    finally:
        holder.rollback()
        holder.close()
    assert answer.status_code == 503, answer.content
    assert answer["Retry-After"] == "2"
    assert answer.json()["error"]["code"] == "unavailable"
    assert api.post("/api/v1/users/u1/sessions/s1/messages/", {"content": "hi"}, format="json").status_code == 201


@pytest.mark.django_db(transaction=True)
def test_an_admin_page_that_runs_out_of_its_lock_wait_answers_503_with_retry_after(
    short_lock_timeout, tenant, admin_client
):
    """As the API does (one decision, agentstate.api.errors.unavailable): staff retry, no 500."""
    page = f"/admin/tenancy/tenant/{tenant.pk}/change/"
    holder = _holder()
    try:
        holder.execute("SELECT 1 FROM tenancy_tenant WHERE slug = 'acme' FOR UPDATE")  # held, not committed
        answer = admin_client.post(page, {"slug": "acme", "name": "Acme Corp"})
    finally:
        holder.rollback()
        holder.close()
    assert answer.status_code == 503, answer.content[:300]
    assert answer["Retry-After"] == "2" and answer["Content-Type"].startswith("text/html")
    assert b"retry shortly" in answer.content
    assert admin_client.post(page, {"slug": "acme", "name": "Acme Corp"}).status_code == 302


def _holder() -> psycopg.Connection:
    """A second connection to the test database, to hold a row lock the app's connection waits on."""
    settings_dict = connection.settings_dict
    return psycopg.connect(
        host=settings_dict["HOST"] or "localhost",
        port=settings_dict["PORT"] or 5432,
        user=settings_dict["USER"],
        password=settings_dict["PASSWORD"] or None,
        dbname=settings_dict["NAME"],
    )


@pytest.mark.django_db(transaction=True)
def test_a_long_jobs_transactions_run_under_the_jobs_timeouts_and_nothing_outlives_them(postgres_only, settings):
    with job_timeouts():
        with transaction.atomic():
            assert _shown("statement_timeout") == settings.DATABASE_JOB_STATEMENT_TIMEOUT
            assert _shown("lock_timeout") == settings.DATABASE_JOB_LOCK_TIMEOUT
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = 2000")  # the job's own, later: it wins
            assert _shown("lock_timeout") == 2
        assert _shown("statement_timeout") == settings.DATABASE_STATEMENT_TIMEOUT  # outside a transaction
    with transaction.atomic():
        assert _shown("statement_timeout") == settings.DATABASE_STATEMENT_TIMEOUT


@pytest.mark.parametrize(
    "command",
    ["migrate", "apply_retention", "erase_user", "reapply_erasures", "erasure_storage_cleanup", "import_sessions"],
)
def test_the_long_jobs_are_job_commands(command):
    assert isinstance(load_command_class(get_commands()[command], command), JobCommand)


def _waits_table() -> list[list[str]]:
    text = (ROOT / "docs" / "SCALING.md").read_text()
    section = text.split("## Every wait is bounded", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| ")]
    return rows[1:]  # after the header


def test_the_documented_waits_are_each_shorter_than_the_one_above_and_are_the_defaults(settings):
    rows = _waits_table()
    seconds = [float(row[1].removesuffix(" s")) for row in rows]
    assert seconds == sorted(seconds, reverse=True) and len(set(seconds)) == len(seconds), seconds
    documented = {row[2].split("`")[1]: float(row[1].removesuffix(" s")) for row in rows if row[2].startswith("`")}
    assert documented["GUNICORN_TIMEOUT"] == 30
    assert documented["DATABASE_STATEMENT_TIMEOUT"] == settings.DATABASE_STATEMENT_TIMEOUT
    assert documented["DATABASE_IDLE_IN_TRANSACTION_TIMEOUT"] == settings.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT
    assert documented["DATABASE_LOCK_TIMEOUT"] == settings.DATABASE_LOCK_TIMEOUT
    assert documented["AGENTSTATE_REPLICA_TIMEOUT"] == settings.REPLICA_TIMEOUT_SECONDS
    assert documented["DATABASE_CONNECT_TIMEOUT"] == settings.DATABASE_CONNECT_TIMEOUT
    assert documented["REDIS_SOCKET_TIMEOUT"] == settings.REDIS_SOCKET_TIMEOUT
    assert documented["REDIS_CONNECT_TIMEOUT"] == settings.REDIS_CONNECT_TIMEOUT


def test_the_recipes_pgbouncer_sets_the_request_timeouts_the_settings_give_a_direct_connection(settings):
    """PgBouncer drops the app's connection options: its connect_query (docs/SCALING.md's recipe,
    which CI runs) must say the same; and the proxy checks /livez."""
    steps = recipe_steps((ROOT / "docs" / "SCALING.md").read_text())
    connect_query = re.search(r"connect_query='([^']*)'", steps["pgbouncer"]).group(1)
    assert connect_query == (
        f"SET statement_timeout = {round(settings.DATABASE_STATEMENT_TIMEOUT * 1000)}; "
        f"SET lock_timeout = {round(settings.DATABASE_LOCK_TIMEOUT * 1000)}; "
        f"SET idle_in_transaction_session_timeout = {round(settings.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT * 1000)}"
    )
    assert "http-check send meth GET uri /livez " in steps["proxy"]
