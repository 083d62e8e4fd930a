"""Admin at scale: the sessions and messages changelists (and the pages staff reach from them) and
the admin home dashboard, rendered in process by Django's test client, logged in as a superuser,
first with 1,000 messages and then with 1,000,000: median and worst render time, and the number
of queries at both sizes (the same number means no query grows with the data).

The dashboard is measured twice: as staff usually see it (activity figures from the cache) and
with the cache emptied before every render (what one render per cache interval pays)."""

from __future__ import annotations

import statistics
import time
from typing import Any

from agentstate_site import bulk_data
from benchmarks import report

TARGET_MS = 300.0
SESSIONS = 10_000  # 10 users x 1,000 sessions
MESSAGES_SMALL, MESSAGES_LARGE = 1_000, 1_000_000
DASHBOARD_UNCACHED = "dashboard, figures recomputed"


def _pages(session_pk: int, user_id: str, tenant_pk: int) -> dict[str, str]:
    return {
        "sessions": "/admin/sessions_app/session/",
        "sessions: live, page 2": "/admin/sessions_app/session/?ended=no&p=2",
        "sessions: search a user": f"/admin/sessions_app/session/?q={user_id}",
        "sessions: search a session id": "/admin/sessions_app/session/?q=s1",
        "session page": f"/admin/sessions_app/session/{session_pk}/change/",
        "messages": "/admin/sessions_app/message/",
        "messages: role=user, page 3": "/admin/sessions_app/message/?role=user&p=3",
        "messages: page 10": "/admin/sessions_app/message/?p=10",
        "messages of one session": f"/admin/sessions_app/message/?session__id__exact={session_pk}",
        "messages: a user's, role=user": f"/admin/sessions_app/message/?user_id={user_id}&role=user",
        "messages: search a session id": "/admin/sessions_app/message/?q=s1",
        "messages: one tenant, page 2": f"/admin/sessions_app/message/?tenant__id__exact={tenant_pk}&p=2",
        "rounds: a user's": f"/admin/sessions_app/round/?user_id={user_id}",
        "dashboard (admin home)": "/admin/",
        DASHBOARD_UNCACHED: "/admin/",
    }


def _measure(client, pages: dict[str, str], renders: int) -> dict[str, dict[str, Any]]:
    from django.core.cache import cache

    from agentstate_site.templatetags.agentstate_dashboard import ACTIVITY_CACHE_KEY

    measured = {}
    for name, url in pages.items():
        # The uncached dashboard loses its figures before every render, outside the timing and count.
        prepare = (lambda: cache.delete(ACTIVITY_CACHE_KEY)) if name == DASHBOARD_UNCACHED else (lambda: None)
        prepare()
        client.get(url)  # warm: templates compiled, caches filled
        prepare()
        with report.StatementLog() as log:
            response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        samples = []
        for _ in range(renders):
            prepare()
            started = time.perf_counter()
            client.get(url)
            samples.append((time.perf_counter() - started) * 1000)
        measured[name] = {
            "queries": len(log),
            "slowest_queries": log.slowest(),
            "median_ms": round(statistics.median(samples), 1),
            "max_ms": round(max(samples), 1),
        }
    return measured


def run(*, renders: int = 15) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app.models import Session

    tenant = tenant_get_or_create(slug="bench")
    for user in range(10):
        bulk_data.sessions_create(tenant=tenant, user_id=f"user{user}", count=SESSIONS // 10)
    session = Session.objects.filter(tenant=tenant).order_by("id").first()
    bulk_data.history_fill(session=session, messages=MESSAGES_SMALL)
    bulk_data.analyze()
    admin = get_user_model().objects.create_superuser("bench-admin", "bench@example.invalid", "unused-password-0")
    client = Client()
    client.force_login(admin)
    pages = _pages(session.pk, session.user_id, tenant.pk)
    print(f"admin: {SESSIONS:,} sessions, {MESSAGES_SMALL:,} messages")
    small = _measure(client, pages, renders)
    started = time.perf_counter()
    added = bulk_data.messages_for_every_session(tenant=tenant, per_session=MESSAGES_LARGE // SESSIONS)
    bulk_data.analyze()
    print(f"admin: {MESSAGES_SMALL + added:,} messages (generated in {time.perf_counter() - started:.0f} s)")
    large = _measure(client, pages, renders)
    results = [{"page": name, "url": url, "small": small[name], "large": large[name]} for name, url in pages.items()]
    worst = max(r["large"]["median_ms"] for r in results)
    return {
        "sessions": SESSIONS,
        "messages": [MESSAGES_SMALL, MESSAGES_SMALL + added],
        "renders": renders,
        "pages": results,
        "targets": {
            "median_ms": {"value": worst, "target": TARGET_MS, "met": worst < TARGET_MS},
            "constant_queries": {"met": all(r["small"]["queries"] == r["large"]["queries"] for r in results)},
        },
    }


def print_table(result: dict[str, Any]) -> None:
    small_n, large_n = result["messages"]
    headers = [
        "page",
        f"queries @{small_n:,}",
        f"queries @{large_n:,}",
        f"median ms @{small_n:,}",
        f"median / max ms @{large_n:,}",
    ]
    rows = [
        [
            r["page"],
            r["small"]["queries"],
            r["large"]["queries"],
            f"{r['small']['median_ms']:.1f}",
            f"{r['large']['median_ms']:.1f} / {r['large']['max_ms']:.1f}",
        ]
        for r in result["pages"]
    ]
    print(report.table(headers, rows))
    t = result["targets"]
    print(
        f"slowest median {t['median_ms']['value']:.1f} ms (target < {TARGET_MS:.0f}) "
        f"{'ok' if t['median_ms']['met'] else 'MISSED'}"
    )
    print(
        f"queries constant from {small_n:,} to {large_n:,} messages: {'ok' if t['constant_queries']['met'] else 'NO'}"
    )
