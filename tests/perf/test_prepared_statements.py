"""The hot statements of a small call are prepared on PostgreSQL (planned once per connection, as the
frameworks' own stores do), and nothing is prepared when the settings say the connection may be
pooled by transaction (PgBouncer cannot keep a prepared statement across transactions)."""

import pytest
from django.db import connection

from sessions_app import services

pytestmark = pytest.mark.django_db


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def _pop_twice(api, tenant) -> None:
    services.session_create(tenant=tenant, user_id="pp", session_id="s")
    url = "/api/v1/users/pp/sessions/s/messages/"
    for content in ("one", "two"):
        assert api.post(url, {"role": "user", "content": content}, format="json").status_code == 201
    for _ in range(2):
        response = api.post(url + "pop/", {}, format="json")
        assert response.status_code == 200, response.content[:300]
    assert response.json()["message"]["content"] == "one"


def test_a_pop_and_an_append_go_prepared_on_postgresql(api, tenant, postgres_only):
    _pop_twice(api, tenant)
    prepared = _prepared()
    for statement in (
        "removed AS (DELETE FROM",  # the pop's deciding statement
        "pg_advisory_xact_lock_shared($",
        'INSERT INTO "sessions_app_message"',
    ):
        assert any(statement in text for text in prepared), (statement, prepared)


@pytest.mark.django_db(transaction=True)  # a new connection: nothing it prepared before
def test_nothing_is_prepared_when_connections_may_be_pooled_by_transaction(api, tenant, postgres_only, monkeypatch):
    connection.close()
    monkeypatch.setitem(connection.settings_dict, "PREPARED_STATEMENTS", False)
    _pop_twice(api, tenant)
    assert _prepared() == []
