"""ADK reads and writes cost the same at any session size: a fixed number of queries, and on
PostgreSQL GetSessionConfig's window is read backwards on the (session, timestamp, seq) index,
never by sorting or loading all events."""

from __future__ import annotations

import itertools
import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agentstate.tenancy.models import APIKey
from backends.adk.process import selectors, services
from backends.adk.process.models import AdkEvent
from sessions_app.models import Session

pytestmark = pytest.mark.django_db
APP = "bench_app"


@pytest.fixture
def adk_api(tenant) -> Client:
    _, key = APIKey.objects.create_key(name="adk-queries", tenant=tenant, scope="agent")
    return Client(headers={"X-Api-Key": key})


def _session(api: Client, user_id: str, events: int) -> Session:
    api.post(f"/api/v1/adk/apps/{APP}/users/{user_id}/sessions/", {"session_id": "s"}, content_type="application/json")
    session = Session.objects.get(app_name=APP, user_id=user_id)
    AdkEvent.objects.bulk_create(
        AdkEvent(
            session=session,
            tenant_id=session.tenant_id,
            user_id=user_id,
            seq=i + 1,
            event_id=f"e{i}",
            author="user",
            timestamp=1000.0 + i,
            data=json.dumps({"id": f"e{i}", "timestamp": 1000.0 + i}),
        )
        for i in range(events)
    )
    Session.objects.filter(pk=session.pk).update(last_seq=events, last_update_time=1000.0 + events)
    session.refresh_from_db()
    return session


def _count(api: Client, method: str, url: str, body=None) -> int:
    """Queries of one request; ``body`` may be a function making a new body for each."""
    body = body() if callable(body) else body
    with CaptureQueriesContext(connection) as queries:
        if body is None:
            response = getattr(api, method)(url)
        else:
            response = getattr(api, method)(url, body, content_type="application/json")
    assert response.status_code < 400, response.content
    return len(queries)


def test_query_counts_do_not_grow_with_the_session(adk_api):
    _session(adk_api, "small", 10)
    _session(adk_api, "big", 3000)
    adk_api.get(f"/api/v1/adk/apps/{APP}/sessions/")  # warms the key cache
    event_ids = itertools.count()
    for method, path, body in [
        ("get", "users/{u}/sessions/s/", None),
        ("get", "users/{u}/sessions/s/?num_recent_events=5&after_timestamp=1001", None),
        (
            "post",
            "users/{u}/sessions/s/events/",
            lambda: {  # each event a new id: a session refuses one it holds
                "event": json.dumps(
                    {
                        "id": f"new{next(event_ids)}",
                        "timestamp": 9999.0,
                        "actions": {"state_delta": {"k": 1, "app:a": 1, "user:u": 1}},
                    }
                )
            },
        ),
        ("get", "sessions/?user_id={u}", None),
        ("get", "users/{u}/state/", None),
    ]:
        for u in ("small", "big"):  # the first write of a user's or an app's state creates its row
            _count(adk_api, method, f"/api/v1/adk/apps/{APP}/" + path.format(u=u), body)
        counts = {
            u: _count(adk_api, method, f"/api/v1/adk/apps/{APP}/" + path.format(u=u), body) for u in ("small", "big")
        }
        # An append with session, app: and user: keys: 9 on PostgreSQL (the transaction's two, the
        # session's lock with the event id's lookup, its writes, the erasure guard, the user's row,
        # its writes, the app's row and its write), 12 on SQLite (statements one by one).
        most = (9 if connection.vendor == "postgresql" else 12) if method == "post" else 13
        assert counts["small"] == counts["big"] <= most, (method, path, counts)


def _analyze_events() -> None:
    """Fresh statistics of the events table alone, as autovacuum would soon make after a bulk load
    (what other tables hold, or earlier tests left in this one's pages, does not enter the plans)."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {AdkEvent._meta.db_table}")


def test_the_window_is_read_backwards_on_the_index(adk_api, postgres_only):
    """The window's start is found by a backwards scan of the index, and a page from a start that
    leaves 2,500 events is read in index order, 101 rows, never by sorting what follows the start.
    (A page from a start that leaves only 50 events may be sorted: the planner's choice, either way
    cheap, and it turned on what earlier tests left in the table's pages.)"""
    session = _session(adk_api, "big", 3000)
    _analyze_events()
    with CaptureQueriesContext(connection) as captured:
        selectors.adk_event_window(session=session, num_recent_events=50, after_timestamp=1500.0)
        window = selectors.adk_event_window(session=session, after_timestamp=1500.0)
        selectors.adk_event_page(session=session, cursor=window, page_size=100, max_bytes=None)  # the admin's
        selectors.adk_event_page(session=session, cursor=window, page_size=100, max_bytes=4096)  # the API's
    assert len(captured.captured_queries) == 3
    for sql in [q["sql"] for q in captured.captured_queries]:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN {sql}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "adk_event_order" in plan and "Sort" not in plan, plan


def test_an_event_id_is_looked_up_on_the_index(adk_api):
    """On both databases, by the session and the id's prefix. SQLite scanned every event of the
    session: the prefix's bounds went as parameters, which its expression index does not match."""
    session = _session(adk_api, "big", 3000)
    _analyze_events()
    identity = [session.tenant_id, "big", "s", APP, services.FRAMEWORK]
    explain = "EXPLAIN QUERY PLAN" if connection.vendor == "sqlite" else "EXPLAIN"
    for event_id, found in (("e1500", ["e1500"]), ("e-new", [])):
        sql, params = services.event_ids_statement(identity=identity, event_id=event_id)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            assert [row[0] for row in cursor.fetchall()] == found
            cursor.execute(f"{explain} {sql}", params)
            plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
        if connection.vendor == "sqlite":
            assert "adk_event_id (session_id=? AND <expr>=?)" in plan, plan
        else:
            scan = plan.partition("using adk_event_id")[2].splitlines()  # the scan, then its condition
            assert len(scan) > 1 and "Index Cond" in scan[1] and "substring" in scan[1], plan


def test_cursors_and_ids_that_the_server_did_not_give_are_a_400(adk_api):
    _session(adk_api, "u", 3)
    for url in (
        f"/api/v1/adk/apps/{APP}/users/u/sessions/s/events/?cursor=W10=",
        f"/api/v1/adk/apps/{APP}/users/u/sessions/s/events/?cursor=nope",
        f"/api/v1/adk/apps/{APP}/sessions/?cursor=WzEuMCwiYVx1MDAwMCIsImIiXQ==",  # [1.0, "a\u0000", "b"]
        f"/api/v1/adk/apps/{APP}/sessions/?user_id=a%00b",
    ):
        response = adk_api.get(url)
        assert response.status_code == 400 and response.json()["error"]["fields"], (url, response.content)


def test_an_event_without_state_delta_is_one_statement_on_postgresql(adk_api, postgres_only):
    """The common append (no state delta, the writer names the version it read) is one round trip;
    a stale version, an id the session holds and a missing session still get their own answers."""
    session = _session(adk_api, "u", 10)
    adk_api.get(f"/api/v1/adk/apps/{APP}/sessions/")  # warms the key cache
    url = f"/api/v1/adk/apps/{APP}/users/u/sessions/s/events/"

    def body(event_id: str, version: int) -> dict:
        return {"event": json.dumps({"id": event_id, "timestamp": 5000.0}), "expected_version": version}

    with CaptureQueriesContext(connection) as queries:
        response = adk_api.post(url, body("new", session.version), content_type="application/json")
    assert response.status_code == 201 and response.json()["version"] == session.version + 1
    assert len(queries) == 1, [q["sql"] for q in queries]
    assert AdkEvent.objects.get(session=session, event_id="new").seq == 11
    for event_id, version, status, code in [
        ("other", session.version, 409, "stale_session"),
        ("new", session.version + 1, 409, "event_exists"),
    ]:
        response = adk_api.post(url, body(event_id, version), content_type="application/json")
        assert response.status_code == status and response.json()["error"]["code"] == code
    missing = adk_api.post(url.replace("/s/", "/gone/"), body("x", 1), content_type="application/json")
    assert missing.status_code == 404
    assert AdkEvent.objects.filter(session=session).count() == 11


def test_a_read_from_held_events_costs_the_same_at_any_size_and_sends_only_new_events(adk_api):
    counts = {}
    for user_id, events in (("small", 10), ("big", 3000)):
        _session(adk_api, user_id, events)
        url = f"/api/v1/adk/apps/{APP}/users/{user_id}/sessions/s/"
        token = adk_api.get(url).json()["events_token"]
        event = {"id": "new", "timestamp": 1.0}  # older than every held event: the reader places it
        adk_api.post(url + "events/", {"event": json.dumps(event)}, content_type="application/json")
        with CaptureQueriesContext(connection) as queries:
            answer = adk_api.get(url, {"held": token}).json()
        counts[user_id] = len(queries)
        assert answer["events_held"] and not answer["events_more"]
        assert [e["id"] for e in answer["events"]] == ["new"]
        assert adk_api.get(url, {"held": answer["events_token"]}).json()["events"] == []
    assert counts["small"] == counts["big"] <= 8, counts
