"""The admin on big tables: searches are exact, case-sensitive equality (which an index serves),
changelist counts stop at a cap and still paginate, dashboard figures come from the cache."""

import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agentstate.admin.pagination import CappedPaginator
from sessions_app.models import Message, Session
from tests.admin.staff import login, staff
from tests.userdata_app.erasure_factories import subject_data_create
from userdata_app import access_requests, erasure
from userdata_app.models import ErasedSubject

SESSIONS = reverse("admin:sessions_app_session_changelist")
MESSAGES = reverse("admin:sessions_app_message_changelist")
USER_DATA = reverse("admin:userdata_app_userdatum_changelist")
ERASED = reverse("admin:userdata_app_erasedsubject_changelist")


@pytest.fixture
def officer(db):
    return staff("officer", groups=["Compliance"])


def search(client, url, q):
    """The changelist for search ``q`` and the SQL of the queries that carry the search term."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, {"q": q})
    assert response.status_code == 200
    return response.context["cl"], [query["sql"] for query in captured.captured_queries if q.split()[0] in query["sql"]]


def test_session_search_is_exact_case_sensitive_equality(client, officer, tenant, other_tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=1)
    subject_data_create(tenant=other_tenant, user_id="alice", sessions=1, messages=1)
    subject_data_create(tenant=tenant, user_id="Alice", sessions=1, messages=1)
    subject_data_create(tenant=tenant, user_id="alicia", sessions=1, messages=1)

    cl, sqls = search(client, SESSIONS, "alice")
    assert sorted((s.tenant.slug, s.user_id, s.session_id) for s in cl.result_list) == [
        ("acme", "alice", "s0"),
        ("acme", "alice", "s1"),
        ("globex", "alice", "s0"),
    ]
    assert sqls and all('"user_id" = ' in sql and "UPPER" not in sql and "LIKE" not in sql for sql in sqls), sqls
    assert search(client, SESSIONS, "ALICE")[0].result_count == 0
    assert search(client, SESSIONS, "alic")[0].result_count == 0
    assert search(client, SESSIONS, "s1")[0].result_count == 1  # a session id, in any tenant
    assert search(client, SESSIONS, "s0")[0].result_count == 4
    assert search(client, SESSIONS, "Alice s0")[0].result_count == 0  # one whole term, never split
    combined = client.get(SESSIONS, {"q": "s0", "user_id": "Alice"}).context["cl"].result_list
    assert [(s.user_id, s.session_id) for s in combined] == [("Alice", "s0")]


def test_user_data_and_erased_subject_searches_are_exact(client, officer, tenant, other_tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=0)
    subject_data_create(tenant=other_tenant, user_id="Alice", sessions=0)

    cl, sqls = search(client, USER_DATA, "alice")
    assert [(d.user_id, d.key) for d in cl.result_list] == [("alice", "name"), ("alice", "email")]
    assert sqls and all('"key" = ' in sql and "UPPER" not in sql and "LIKE" not in sql for sql in sqls), sqls
    assert search(client, USER_DATA, "EMAIL")[0].result_count == 0
    assert search(client, USER_DATA, "email")[0].result_count == 2
    assert search(client, USER_DATA, "Alice email")[0].result_count == 0  # one whole term, never split
    assert [d.user_id for d in client.get(USER_DATA, {"q": "email", "user_id": "Alice"}).context["cl"].result_list] == [
        "Alice"
    ]

    entry = ErasedSubject.objects.create(
        subject_hash="ab" * 32, key_id="k1", scope="everything", grace_until=timezone.now() + timedelta(hours=1)
    )
    assert [e.pk for e in search(client, ERASED, "ab" * 32)[0].result_list] == [entry.pk]
    assert search(client, ERASED, "ab" * 31)[0].result_count == 0


@pytest.fixture
def small_pages(monkeypatch):
    """A cap of 5 rows, 2 rows per page and "show all" up to 2 rows (below the cap, as in
    production), so a dozen messages run past the cap."""
    monkeypatch.setattr(CappedPaginator, "cap", 5)
    for model in (Message, Session):
        monkeypatch.setattr(admin.site.get_model_admin(model), "list_per_page", 2)
        monkeypatch.setattr(admin.site.get_model_admin(model), "list_max_show_all", 2)


def test_show_all_never_reaches_past_the_cap():
    """ "Show all" lists the whole filtered table: it must only be offered below the cap."""
    capped = [a for a in admin.site._registry.values() if issubclass(a.paginator, CappedPaginator)]
    assert capped and all(a.list_max_show_all < CappedPaginator.cap for a in capped)


def paginator_text(response) -> str:
    html = response.content.decode()
    paginator = html[html.index('<p class="paginator">') :]
    return " ".join(re.sub(r"<[^>]+>", " ", paginator[: paginator.index("</p>")]).split())


def test_changelist_counts_stop_at_the_cap_and_still_paginate(client, officer, tenant, small_pages):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=3, messages=4)  # 12 messages

    with CaptureQueriesContext(connection) as captured:
        first = client.get(MESSAGES)
    (count_sql,) = [q["sql"] for q in captured.captured_queries if "COUNT(" in q["sql"].upper()]
    assert "LIMIT 6" in count_sql  # the cap + 1 rows, never the whole table
    assert first.context["cl"].result_count == 5
    assert paginator_text(first) == "1 2 3 5+ messages"
    rows = first.context["cl"].result_list
    assert [m.seq for m in rows] == [1, 2]

    third = client.get(MESSAGES, {"p": 3})
    assert [(m.session_id, m.seq) for m in third.context["cl"].result_list] == [(rows[0].session_id + 1, 1)]
    beyond = client.get(MESSAGES, {"p": 4})
    assert beyond.status_code == 302 and beyond.url.endswith("?e=1")  # Django's answer to a page that is not there

    narrowed = client.get(MESSAGES, {"session__id__exact": rows[0].session_id})  # below the cap: the exact count
    assert narrowed.context["cl"].result_count == 4 and paginator_text(narrowed) == "1 2 4 messages"


def test_searches_show_the_capped_count_too(client, officer, tenant, small_pages):
    login(client, officer)
    for n in range(3):
        subject_data_create(tenant=tenant, user_id=f"u{n}", sessions=3, messages=1)

    response = client.get(SESSIONS, {"q": "s0"})
    assert response.context["cl"].result_count == 3
    assert "3 results" in response.content.decode() and paginator_text(response) == "1 2 3 sessions"
    capped = client.get(SESSIONS)
    assert capped.context["cl"].result_count == 5 and paginator_text(capped) == "1 2 3 5+ sessions"


def test_dashboard_activity_comes_from_the_cache_and_erasure_counts_are_live(client, officer, tenant, fresh_dashboard):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=4)
    first = client.get(reverse("admin:index")).content.decode()
    # sessions, messages, active today; open and overdue erasure requests; the same of access requests;
    # active legal holds
    assert re.findall(r'<span class="n">(\d+)</span>', first) == ["1", "4", "1", "0", "0", "0", "0", "0"]
    assert "as of" in first

    subject_data_create(tenant=tenant, user_id="bob", sessions=1, messages=2)
    erasure.erasure_request_create(subjects=[(tenant, "bob")])
    access_requests.access_request_create(subjects=[(tenant, "bob")])
    with CaptureQueriesContext(connection) as captured:
        second = client.get(reverse("admin:index")).content.decode()
    # Activity as cached; requests and holds live.
    assert re.findall(r'<span class="n">(\d+)</span>', second) == ["1", "4", "1", "1", "0", "1", "0", "0"]
    assert not [q for q in captured.captured_queries if "sessions_app_message" in q["sql"]]
