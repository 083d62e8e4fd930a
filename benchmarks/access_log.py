"""The access log's write cost on an admin page view (issue 30): a session's page (one entry) and
a list of 100 messages of 10 people (ten entries, one per person), rendered in process by Django's
test client as a superuser, with the log on and with its recorder unregistered. Median render
time and statements per render, on the benchmark's own database (SQLite, or PostgreSQL with
DATABASE_URL). Run: ``python -m benchmarks.access_log [--renders N]``."""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks import report
from benchmarks.bench_db import bench_database


def _data() -> dict[str, str]:
    from django.contrib.auth import get_user_model

    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app import services

    tenant = tenant_get_or_create(slug="bench")
    first = None
    for person in range(10):
        session = services.session_create(tenant=tenant, user_id=f"user-{person}", session_id="s1")
        services.message_append(session=session, messages=[{"content": f"message {n}"} for n in range(10)])
        first = first or session
    get_user_model().objects.create_superuser("bench", "bench@example.invalid")
    assert first is not None
    return {
        "session page (1 entry)": f"/admin/sessions_app/session/{first.pk}/change/",
        "100 messages of 10 people (10 entries)": "/admin/sessions_app/message/",
    }


def _measure(client, url: str, renders: int) -> tuple[float, int]:
    client.get(url)
    with report.StatementLog() as log:
        assert client.get(url).status_code == 200
    samples = []
    for _ in range(renders):
        started = time.perf_counter()
        client.get(url)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), len(log)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--renders", type=int, default=50)
    args = parser.parse_args()
    with bench_database() as url:
        from django.contrib.auth import get_user_model
        from django.test import Client

        from agentstate import access
        from userdata_app.access_log.recorder import AccessRecorder

        pages = _data()
        client = Client()
        client.force_login(get_user_model().objects.get(username="bench"))
        print(f"database: {url.split(':')[0]}, {args.renders} renders each")
        print(f"{'page':42} {'log on ms':>10} {'off ms':>8} {'cost ms':>8} {'stmts on/off':>13}")
        for name, page in pages.items():
            access.register(AccessRecorder())
            on, statements_on = _measure(client, page, args.renders)
            access._recorder = None  # as if no log were kept
            off, statements_off = _measure(client, page, args.renders)
            print(f"{name:42} {on:10.1f} {off:8.1f} {on - off:8.1f} {statements_on:>6}/{statements_off}")
            access.register(AccessRecorder())


if __name__ == "__main__":
    main()
