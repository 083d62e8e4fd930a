"""Everything works through PgBouncer in transaction pooling: no session state outlives a
transaction (the servers and these tests reach the primary only through it)."""

from django.conf import settings
from django.db import connection

from agentstate import subject_data
from sessions_app import services
from tests.multinode.servers import PRIMARY, client, in_threads, key_new, needs_servers, sql, tenant_new

pytestmark = needs_servers


def test_the_service_reaches_the_primary_through_pgbouncer_in_transaction_mode():
    assert connection.settings_dict["PORT"] != PRIMARY.rsplit(":", 1)[1].split("/")[0]
    assert connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] is True
    with connection.cursor() as cursor:  # PgBouncer hands each transaction any server connection
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] > 0
    assert settings.DATABASES["replica1"]["PORT"] != connection.settings_dict["PORT"]


def test_advisory_locks_end_with_their_transactions():
    """Erasure's subject locks are transaction-scoped: none is left on a pooled server connection."""
    tenant = tenant_new()
    key = key_new(tenant)

    def write(t: int) -> int:
        with client(key) as api:
            return api.put(f"/api/v1/users/u{t % 3}/data/k{t}/", json={"value": t}).status_code

    assert in_threads(12, write) == [200] * 12
    assert sql(PRIMARY, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")[0] == 0


def test_a_streamed_read_works_without_server_side_cursors():
    tenant = tenant_new()
    for n in range(3):
        services.session_create(tenant=tenant, user_id=f"u{n}", session_id="s1")
    subjects = {(slug, user) for slug, user in subject_data.subject_ids() if slug == tenant.slug}
    assert subjects == {(tenant.slug, "u0"), (tenant.slug, "u1"), (tenant.slug, "u2")}


def test_repeated_statements_are_never_prepared_on_the_server():
    """psycopg would prepare a statement after 5 runs; PgBouncer 1.18 would then lose it."""
    tenant = tenant_new()
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    with client(key_new(tenant)) as api:
        answers = [api.post("/api/v1/users/u1/sessions/s1/messages/", json={"content": str(n)}) for n in range(30)]
    assert {a.status_code for a in answers} == {201}
    assert connection.connection.prepare_threshold is None


def test_the_request_timeouts_apply_through_pgbouncer():
    """PgBouncer drops the connection's startup options: its connect_query sets the same bounds."""
    with connection.cursor() as cursor:
        for name, seconds in (
            ("statement_timeout", settings.DATABASE_STATEMENT_TIMEOUT),
            ("lock_timeout", settings.DATABASE_LOCK_TIMEOUT),
            ("idle_in_transaction_session_timeout", settings.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT),
        ):
            cursor.execute(f"SHOW {name}")
            cursor.execute("SELECT EXTRACT(EPOCH FROM %s::interval)", [cursor.fetchone()[0]])
            assert float(cursor.fetchone()[0]) == seconds, name
