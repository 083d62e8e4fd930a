"""The admin on big tables (docs/PERFORMANCE.md, "Admin at scale"): each changelist runs the same
statements at any table size, its count stops at a cap, and on PostgreSQL the exact searches are
served by an index. Counts and plans only, never timings."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agentstate_site import bulk_data
from agentstate_site.templatetags.agentstate_dashboard import ACTIVITY_CACHE_KEY
from sessions_app.models import Session

pytestmark = [pytest.mark.django_db, pytest.mark.scale]

SESSIONS = reverse("admin:sessions_app_session_changelist")
MESSAGES = reverse("admin:sessions_app_message_changelist")
USER_DATA = reverse("admin:userdata_app_userdatum_changelist")
ROUNDS = reverse("admin:sessions_app_round_changelist")
CHECKPOINTS = reverse("admin:sessions_app_checkpoint_changelist")
TRANSITIONS = reverse("admin:sessions_app_agenttransition_changelist")


def _pages(session: Session) -> dict[str, str]:
    tenant, user = session.tenant_id, session.user_id
    return {
        "sessions": SESSIONS,
        "sessions: live": f"{SESSIONS}?ended=no",
        "sessions: search": f"{SESSIONS}?q={user}",
        "sessions: created, agent": f"{SESSIONS}?created_at__gte=2000-01-01T00:00%2B00:00&agent_id=agent",
        "messages": MESSAGES,
        "messages: role": f"{MESSAGES}?role=user",
        "messages of one session": f"{MESSAGES}?session__id__exact={session.pk}",
        "messages: tenant": f"{MESSAGES}?tenant__id__exact={tenant}",
        "messages: user id, date": f"{MESSAGES}?user_id={user}&created_at__gte=2000-01-01T00:00%2B00:00",
        "messages: session id, role": f"{MESSAGES}?session_id={session.session_id}&role=user",
        "messages: search": f"{MESSAGES}?q={user}",
        "rounds: user id": f"{ROUNDS}?user_id={user}",
        "checkpoints: search": f"{CHECKPOINTS}?q={session.session_id}",
        "transitions: tenant": f"{TRANSITIONS}?tenant__id__exact={tenant}",
        "user data: search": f"{USER_DATA}?q={user}",
        "dashboard": reverse("admin:index"),
    }


def _statements(client, url: str) -> list[str]:
    client.get(url)  # the dashboard's figures are cached from here on
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]


def test_admin_pages_run_the_same_statements_at_any_size_and_cap_their_counts(admin_client, tenant):
    from django.core.cache import cache

    bulk_data.sessions_create(tenant=tenant, user_id="u0", count=10)
    session = Session.objects.get(tenant=tenant, user_id="u0", session_id="s1")
    bulk_data.history_fill(session=session, messages=10)
    bulk_data.user_data_create(tenant=tenant, user_id="u0", count=3)
    pages = _pages(session)
    small = {name: _statements(admin_client, url) for name, url in pages.items()}

    for user in range(1, 5):
        bulk_data.sessions_create(tenant=tenant, user_id=f"u{user}", count=100)
    bulk_data.messages_for_every_session(tenant=tenant, per_session=30)
    cache.delete(ACTIVITY_CACHE_KEY)
    large = {name: _statements(admin_client, url) for name, url in pages.items()}

    assert {name: len(sqls) for name, sqls in large.items()} == {name: len(sqls) for name, sqls in small.items()}
    counts = [sql for sqls in large.values() for sql in sqls if "COUNT(*)" in sql and "_app_" in sql]
    changelist_counts = [sql for sql in counts if "subquery" in sql]
    assert len(changelist_counts) == len(pages) - 1  # one per changelist, none on the dashboard
    assert all("LIMIT 10001" in sql for sql in changelist_counts), changelist_counts


def statistics_as_if_fresh(*tables: str) -> None:
    """Rebuild these tables' indexes and sample them: what earlier tests left in this database
    (index entries of rolled-back rows, which make an index look costlier than a scan) must not
    decide the plan. Inside the test's transaction, so the rows it loaded are counted."""
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"REINDEX TABLE {connection.ops.quote_name(table)}")
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize(
    "url,term,table,indexes",
    [
        (SESSIONS, "u17", "sessions_app_session", ("session_user_id", "session_session_id")),
        (SESSIONS, "u17-s3", "sessions_app_session", ("session_user_id", "session_session_id")),
        (USER_DATA, "u17", "userdata_app_userdatum", ("user_datum_user_id", "user_datum_key")),
    ],
    ids=["sessions by user id", "sessions by session id", "user data by user id"],
)
def test_exact_searches_use_an_index_without_the_tenant(admin_client, tenant, postgres_only, url, term, table, indexes):
    for user in range(500):
        bulk_data.sessions_create(tenant=tenant, user_id=f"u{user}", count=10, prefix=f"u{user}-s")
        bulk_data.user_data_create(tenant=tenant, user_id=f"u{user}", count=10)
    statistics_as_if_fresh("sessions_app_session", "userdata_app_userdatum")

    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(url, {"q": term})
    assert response.status_code == 200 and response.context["cl"].result_count >= 1
    searches = [q["sql"] for q in captured.captured_queries if f"'{term}'" in q["sql"]]
    assert len(searches) == 2  # the capped count and the page
    for sql in searches:
        plan = _plan(sql)
        assert f"Seq Scan on {table}" not in plan and all(name in plan for name in indexes), plan


SESSION_INDEX = re.compile(
    r"Index (Only )?Scan using session_\w+ on sessions_app_session|Bitmap Index Scan on session_"
)


@pytest.mark.parametrize(
    "params",
    [
        {"user_id": "u17"},
        {"session_id": "u17-s3"},
        {"q": "u17"},
        {"q": "u17-s3", "role": "user"},
        {"user_id": "u17", "created_at__gte": "2000-01-01 00:00+00:00"},
    ],
    ids=["user id", "session id", "search a user", "search a session, role", "user id and date"],
)
def test_message_filters_find_rows_through_the_session_indexes(admin_client, tenant, postgres_only, params):
    """A message is found by user or session id through its session: the sessions' indexes, then
    the messages' (session, ...) index, never a scan of the message table."""
    # 10,000 sessions: with 1,000, walking the sessions' primary key in the page's order and
    # filtering every session cost the planner about as much as the two indexes (it chose either).
    for user in range(1000):
        bulk_data.sessions_create(tenant=tenant, user_id=f"u{user}", count=10, prefix=f"u{user}-s")
    bulk_data.messages_for_every_session(tenant=tenant, per_session=2)
    statistics_as_if_fresh("sessions_app_session", "sessions_app_message")

    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(MESSAGES, params)
    assert response.status_code == 200 and response.context["cl"].result_count >= 1
    term = next(iter(params.values()))
    searches = [
        q["sql"] for q in captured.captured_queries if f"'{term}'" in q["sql"] and "sessions_app_message" in q["sql"]
    ]
    assert len(searches) == 2  # the capped count and the page
    for sql in searches:
        plan = _plan(sql)
        # The sessions are found by an index; the planner may still read the small sessions table
        # whole to join the page's session labels, which it stops doing as the table grows.
        assert "Seq Scan on sessions_app_message" not in plan and SESSION_INDEX.search(plan), plan
