"""Query counts the benchmarks rely on (docs/PERFORMANCE.md): every agent operation runs the same
number of statements whatever the history size, and the hot writes are one statement on
PostgreSQL. Counts only, never timings.

Savepoint statements are left out of the counts: they come from the test's own transaction
(each test runs inside one), not from the code under test.
"""

import itertools
import json

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agentstate_site import bulk_data
from sessions_app import selectors, services
from sessions_app.api.serializers import MessageSerializer
from sessions_app.models import Message

pytestmark = pytest.mark.django_db

SIZES = (10, 1_000)
_users = itertools.count()


def _statements(queries) -> list[str]:
    return [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]


def _count(operation) -> int:
    with CaptureQueriesContext(connection) as captured:
        operation()
    return len(_statements(captured.captured_queries))


def _history(tenant, size: int):
    """A new user with ``size`` sessions; its session s1 has ``size`` messages and rounds."""
    user_id = f"u{next(_users)}"
    bulk_data.sessions_create(tenant=tenant, user_id=user_id, count=size)
    session = selectors.session_get(tenant=tenant, user_id=user_id, session_id="s1")
    return bulk_data.history_fill(session=session, messages=size, rounds=size)


def _per_size(tenant, operation) -> dict[int, int]:
    """``operation(session)``'s statement count at each history size."""
    counts = {}
    for size in SIZES:
        session = _history(tenant, size)
        counts[size] = _count(lambda: operation(session))  # noqa: B023 (called at once, in this iteration)
    return counts


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def test_appending_a_message_is_one_statement_on_postgresql_at_any_history_size(tenant):
    counts = _per_size(
        tenant, lambda s: services.message_append(session=s, messages=[{"role": "user", "content": "hi"}])
    )
    # PostgreSQL: the counter bump and the insert are one CTE; SQLite: UPDATE ... RETURNING, INSERT.
    assert counts == {size: 1 if _postgres() else 2 for size in SIZES}


def test_a_kept_pop_is_one_round_trip_on_postgresql_at_any_history_size(tenant):
    keys = itertools.count()
    counts = _per_size(tenant, lambda s: services.message_pop(session=s, idempotency_key=f"k{next(keys)}"))
    # PostgreSQL: the row and hold locks, then the checks and the edit, two statements in one round
    # trip. SQLite (no hold lock, no CTE that writes): the lock, the checks, the delete, the
    # counters, the usage count and drop, the kept answer.
    assert counts == {size: 1 if _postgres() else 7 for size in SIZES}


def test_saving_an_automatic_round_is_one_statement_on_postgresql_at_any_history_size(tenant):
    counts = _per_size(
        tenant,
        lambda s: services.round_save(tenant=tenant, user_id=s.user_id, session_id=s.session_id, state={"step": 1}),
    )
    # SQLite: the session lookup, UPDATE ... RETURNING, INSERT.
    assert counts == {size: 1 if _postgres() else 3 for size in SIZES}


def test_reads_are_one_statement_at_any_history_size(tenant):
    reads = {
        "latest round": lambda s: selectors.round_export(tenant=tenant, user_id=s.user_id, session_id=s.session_id),
        "one round": lambda s: selectors.round_export(
            tenant=tenant, user_id=s.user_id, session_id=s.session_id, round_id=5
        ),
        "recent 50 messages": lambda s: selectors.message_recent(session=s, limit=50),
        "first page of sessions": lambda s: list(selectors.session_list(tenant=tenant, user_id=s.user_id)[:101]),
    }
    for name, read in reads.items():
        assert _per_size(tenant, read) == dict.fromkeys(SIZES, 1), name


# --- The same through the API, as the HTTP load benchmark drives it ----------------------------


@pytest.fixture
def agent_api(tenant):
    from rest_framework.test import APIClient

    from agentstate.tenancy import selectors as tenancy_selectors
    from agentstate.tenancy.services import api_key_create

    tenancy_selectors.api_key_cache_clear()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name='bench')[1]}")
    yield client
    tenancy_selectors.api_key_cache_clear()


def _request_counts(api, tenant, method: str, path: str, body=None) -> dict[int, int]:
    """Statements of one request at each history size, once the API key is verified and cached."""
    counts = {}
    for size in SIZES:
        session = _history(tenant, size)
        url = f"/api/v1/users/{session.user_id}/sessions/{session.session_id}/{path}"
        api.get(url)  # the first request of a key verifies it; later ones find it in the cache
        with CaptureQueriesContext(connection) as captured:
            response = getattr(api, method)(url, body, format="json") if body else getattr(api, method)(url)
        assert response.status_code in (200, 201), response.content[:300]
        counts[size] = len(_statements(captured.captured_queries))
    return counts


def test_api_append_is_one_statement_on_postgresql_the_session_found_by_it(agent_api, tenant):
    body = {"messages": [{"role": "user", "content": "hi"}]}
    assert _request_counts(agent_api, tenant, "post", "messages/", body) == {
        size: 1 if _postgres() else 3 for size in SIZES
    }


def test_api_pop_is_one_round_trip_on_postgresql_the_session_found_by_its_lock(agent_api, tenant):
    # PostgreSQL: the locks (finding the session), then the checks and the edit, in one round trip.
    counts = _request_counts(agent_api, tenant, "post", "messages/pop/", {"idempotency_key": "k1"})
    assert counts == {size: 1 if _postgres() else 8 for size in SIZES}


def test_api_automatic_round_save_is_one_statement_on_postgresql(agent_api, tenant):
    counts = _request_counts(agent_api, tenant, "post", "rounds/", {"state": {"step": 1}})
    assert counts == {size: 1 if _postgres() else 3 for size in SIZES}


def test_api_reads_run_a_fixed_number_of_statements(agent_api, tenant):
    assert _request_counts(agent_api, tenant, "get", "rounds/latest/") == dict.fromkeys(SIZES, 1)
    # PostgreSQL: the recent page is read in the session's own statement.
    assert _request_counts(agent_api, tenant, "get", "messages/?recent=20") == dict.fromkeys(
        SIZES, 1 if _postgres() else 2
    )


def test_a_recent_read_whose_window_pops_emptied_is_two_statements_on_postgresql(agent_api, tenant):
    # 25 pops leave the newest seqs unused past the window: the page is read again, by the counters
    # the first statement read (PostgreSQL), or after the session (SQLite: the window, then all).
    session = _history(tenant, 1_000)
    for _ in range(25):
        services.message_pop(session=session)
    url = f"/api/v1/users/{session.user_id}/sessions/{session.session_id}/messages/?recent=20"
    agent_api.get(url)  # the key verified and cached
    with CaptureQueriesContext(connection) as captured:
        page = agent_api.get(url).json()["results"]
    assert [m["seq"] for m in page] == list(range(956, 976))
    assert len(_statements(captured.captured_queries)) == (2 if _postgres() else 3)


def test_api_key_is_not_looked_up_again_while_cached(agent_api, tenant):
    session = _history(tenant, 10)
    url = f"/api/v1/users/{session.user_id}/sessions/{session.session_id}/rounds/latest/"
    agent_api.get(url)
    with CaptureQueriesContext(connection) as captured:
        for _ in range(3):
            agent_api.get(url)
    assert not [sql for sql in _statements(captured.captured_queries) if "apikey" in sql.lower()]


# --- Plans: the reads walk an index backwards, never sort a whole history ---------------------


@pytest.mark.parametrize(
    "read",
    [
        lambda tenant, s: selectors.round_get(tenant=tenant, user_id=s.user_id, session_id=s.session_id),
        lambda tenant, s: selectors.message_recent(session=s, limit=50),
    ],
    ids=["latest round", "recent messages"],
)
def test_latest_reads_do_not_sort_the_history(tenant, postgres_only, read):
    session = _history(tenant, 1_000)
    bulk_data.analyze()
    with CaptureQueriesContext(connection) as captured:
        read(tenant, session)
    (sql,) = _statements(captured.captured_queries)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan Backward" in plan and "Sort" not in plan, plan


def test_a_recent_read_is_bounded_by_its_window_whatever_the_plan(tenant, postgres_only):
    """With statistics from before a session grew (a table autovacuum has not analyzed since),
    PostgreSQL expects a few rows of it and reads them all through a bitmap, then sorts: for 20 of
    2,000 messages it read the 2,000. That plan is forced here; the read still takes at most the
    window's rows."""
    session = _history(tenant, 2_000)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")  # the test's own transaction
    with CaptureQueriesContext(connection) as captured:
        rows = selectors.message_recent_rows(
            session=session, limit=20, serializer_class=MessageSerializer, max_bytes=settings.PAGE_MAX_BYTES
        )
    assert [seq for seq, _ in rows] == list(range(1_981, 2_001))
    (sql,) = _statements(captured.captured_queries)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}")
        (plan,) = cursor.fetchone()
    assert _rows_read(plan[0]["Plan"], Message._meta.db_table) <= selectors.recent_window(session, 20), plan


def _rows_read(node: dict, table: str) -> int:
    """The most rows any scan of ``table`` in an EXPLAIN (ANALYZE, FORMAT JSON) plan returned."""
    own = node["Actual Rows"] if node.get("Relation Name") == table else 0
    return max([own, *(_rows_read(child, table) for child in node.get("Plans", []))])


# --- ADK: a session's create and an app's list --------------------------------------------------


def _adk_count(api, method: str, url: str, body=None) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = getattr(api, method)(url, body, format="json") if body is not None else getattr(api, method)(url)
    assert response.status_code in (200, 201), response.content[:300]
    return len(_statements(captured.captured_queries))


def test_adk_list_sessions_is_two_statements_at_any_count(agent_api):
    """The page of sessions, then the app's state and its users' in one statement: the state rows
    are read once per page, never per session."""
    counts = {}
    for count in (3, 60):
        user = f"adk{count}"
        state = json.dumps({"k": 1, "app:a": 1, "user:u": count})
        for n in range(count):
            body = {"session_id": f"s{n}", "state": state}
            response = agent_api.post(f"/api/v1/adk/apps/listed/users/{user}/sessions/", body, format="json")
            assert response.status_code == 201, response.content
        counts[count] = _adk_count(agent_api, "get", f"/api/v1/adk/apps/listed/sessions/?user_id={user}")
    assert counts == {3: 2, 60: 2}


def test_adk_create_session_statements(agent_api):
    """A create without app: or user: state: on PostgreSQL one query, the erased-subject guard (the
    subject's shared lock, the registry lookup after it) and the insert where it passed, which reads
    the app's and user's state back itself; SQLite: the lookup, the insert and a read of its own."""
    url = "/api/v1/adk/apps/created/users/adk-create/sessions/"
    agent_api.post(url, {"state": "{}"}, format="json")  # warms the key cache
    assert _adk_count(agent_api, "post", url, {"state": json.dumps({"k": 1})}) == (1 if _postgres() else 3)
