"""The hot statements of a small call are prepared on PostgreSQL (planned once per connection, as the
frameworks' own stores do), and nothing is prepared when the settings say the connection may be
pooled by transaction (PgBouncer cannot keep a prepared statement across transactions)."""

import pytest
from django.db import connection
from psycopg import _queries

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


def _writes_batch(tenant, checkpoint_id: str) -> None:
    """Four tasks' writes of one thread, two each: one statement of 68 parameters (past psycopg's 50)."""
    from backends.langgraph.process import services as langgraph_services  # skips without the backend

    writes = [
        langgraph_services.writes_write(
            thread_id="long",
            user_id=None,
            default_user_id="pp",
            checkpoint_ns="",
            checkpoint_id=checkpoint_id,
            task_id=f"task-{task}",
            task_path="",
            writes=[
                {"idx": idx, "channel": f"c{idx}", "value": {"type": "msgpack", "data": b"\x01"}} for idx in (0, 1)
            ],
            replace=False,
        )
        for task in range(4)
    ]
    assert langgraph_services.thread_writes_store(tenant=tenant, writes=writes) == [None] * 4


def test_a_long_prepared_statement_is_converted_once(tenant, postgres_only, monkeypatch):
    """psycopg converts a statement's text (placeholders to $n) again at every call past 50
    parameters; a prepared statement's is converted once per text (a LangGraph step's batch)."""
    converted: list[bytes] = []
    convert = _queries._query2pg_nocache

    def counted(query: bytes, encoding: str):
        converted.append(query)
        return convert(query, encoding)

    monkeypatch.setattr(_queries, "_query2pg_nocache", counted)
    _writes_batch(tenant, "first")  # makes the thread: each write alone
    for checkpoint_id in ("second", "third", "fourth"):
        _writes_batch(tenant, checkpoint_id)
    batches = [query for query in converted if query.startswith(b"WITH s AS (UPDATE") and query.count(b"%s") > 50]
    assert len(batches) <= 1, len(batches)
