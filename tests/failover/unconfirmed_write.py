"""Run as ``python -m tests.failover.unconfirmed_write`` with DATABASE_URL naming an empty database
of a throwaway cluster (tests/test_synchronous_replication.py) and a short
AGENTSTATE_COMMIT_TIMEOUT_SECONDS: migrates it, then makes its primary wait for a synchronous
standby that does not exist, writes through the API and prints what every step answered as one
JSON object."""

import json
import os
import threading
import time

import django
import psycopg

os.environ["DJANGO_SETTINGS_MODULE"] = "agentstate_site.settings"
django.setup()

from django.core.management import call_command  # noqa: E402 (after django.setup)
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from agentstate.postgresql.base import ReplicationUnconfirmed  # noqa: E402
from agentstate.tenancy.services import api_key_create, tenant_get_or_create  # noqa: E402

MESSAGES = "/api/v1/users/u1/sessions/s1/messages/"


def admin_connection() -> psycopg.Connection:
    """A connection of its own to the app's database, in autocommit."""
    url = connection.settings_dict
    return psycopg.connect(
        f"host={url['HOST']} port={url['PORT']} dbname={url['NAME']} user={url['USER']}", autocommit=True
    )


def standby_required(names: str) -> None:
    """Set synchronous_standby_names and wait until new connections see it."""
    with admin_connection() as admin:
        admin.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{names}'")
        admin.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 10
    while admin_connection().execute("SHOW synchronous_standby_names").fetchone()[0] != names:
        assert time.monotonic() < deadline, "the setting was not reloaded"
        time.sleep(0.05)
    connection.close()  # the next request opens a connection with the new setting


def main() -> None:
    call_command("migrate", verbosity=0)
    key = api_key_create(tenant=tenant_get_or_create(slug="t1"), name="agent", scope="agent")[1]
    api = Client(HTTP_AUTHORIZATION=f"Api-Key {key}")
    result: dict[str, object] = {}
    standby_required("absent_standby")
    created = api.post("/api/v1/sessions/", {"user_id": "u1", "session_id": "s1"}, content_type="application/json")
    message = {"messages": [{"client_id": "m1", "content": "hello"}]}
    appended = api.post(MESSAGES, message, content_type="application/json")
    result["health"] = api.get("/healthz").json()
    try:  # a statement in autocommit mode is its own commit, cancelled here by someone else
        with connection.cursor() as cursor:
            threading.Timer(0.5, connection.connection.cancel_safe).start()
            cursor.execute("UPDATE django_migrations SET applied = applied WHERE id = 1")
        result["autocommit"] = "no error"
    except ReplicationUnconfirmed as exc:
        result["autocommit"] = type(exc).__name__
    for name, answer in (("create", created), ("append", appended)):
        result[name] = {"status": answer.status_code, "retry_after": answer.get("Retry-After"), "body": answer.json()}
    standby_required("")
    result["retried"] = api.post(MESSAGES, message, content_type="application/json").status_code
    result["history"] = [m["content"] for m in api.get(MESSAGES).json()["results"]]
    result["health_without_standby_names"] = api.get("/healthz").json()
    print(json.dumps(result))  # noqa: T201 (the test reads it)


if __name__ == "__main__":
    main()
