"""Retention at scale (PostgreSQL): ended sessions full of expired messages swept by
``retention_apply`` while live agents keep appending to their own sessions. Reports the sweep's
duration and rows/s, the appends' latency during the sweep (p50/p99) and errors, and the
statements of every batch (constant: the sweep is bulk per batch, never per row)."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import timedelta
from typing import Any

from agentstate_site import bulk_data
from benchmarks import report

TARGET_P99_MS = 50.0
MESSAGES_PER_SESSION = 100
AGENTS = 4  # live agents appending, each to its own session, one message per append
BATCH_SIZE = 200


def _agents(tenant, stop: threading.Event, sweeping: threading.Event, samples: list[int], errors: list[str]):
    from django.db import connection

    from sessions_app import services

    def agent(n: int) -> None:
        try:
            session = services.session_create(tenant=tenant, user_id=f"agent-{n}", session_id=f"live-{n}")
            while not stop.is_set():
                started = time.perf_counter_ns()
                try:
                    services.message_append(
                        session=session, messages=[{"role": "assistant", "content": "still working"}]
                    )
                except Exception as exc:
                    errors.append(repr(exc))
                    continue
                if sweeping.is_set():
                    samples.append(time.perf_counter_ns() - started)
                time.sleep(0.002)  # an agent thinks between turns
        finally:
            connection.close()

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(AGENTS)]
    for thread in threads:
        thread.start()
    return threads


def run(*, sessions: int) -> dict[str, Any]:
    from django.utils import timezone

    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app import services
    from sessions_app.models import Message, Session

    tenant = tenant_get_or_create(slug="bench")
    messages = sessions * MESSAGES_PER_SESSION
    print(f"retention: generating {sessions:,} ended sessions with {messages:,} expired messages")
    bulk_data.sessions_create(tenant=tenant, user_id="gone", count=sessions, prefix="ended-")
    bulk_data.messages_for_every_session(tenant=tenant, per_session=MESSAGES_PER_SESSION)
    ended = timezone.now() - timedelta(days=90)
    Session.objects.filter(tenant=tenant).update(ended_at=ended, updated_at=ended)
    Message.objects.filter(tenant=tenant).update(created_at=ended)
    bulk_data.analyze()
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=30)

    stop, sweeping, samples, errors = threading.Event(), threading.Event(), [], []
    agents = _agents(tenant, stop, sweeping, samples, errors)
    time.sleep(1.0)  # agents running before the sweep starts
    marks: list[int] = []  # statements sent when each batch committed
    with report.StatementLog() as log:

        def batch_done(batch) -> None:
            marks.append(len(log))

        sweeping.set()
        started = time.perf_counter()
        run_record = services.retention_apply(tenant=tenant, batch_size=BATCH_SIZE, on_batch=batch_done)
        seconds = time.perf_counter() - started
        sweeping.clear()
    stop.set()
    for thread in agents:
        thread.join(timeout=60)
    removed_sessions = run_record.counts["bench"]["ended_sessions_deleted"]
    left = Session.objects.filter(tenant=tenant, user_id="gone").count()
    live_kept = Session.objects.filter(tenant=tenant, session_id__startswith="live-", ended_at__isnull=True).count()
    rows = removed_sessions + messages
    latency = report.summarize_ms(samples) if samples else {"n": 0, "median_ms": None, "p99_ms": None}
    # Statements between two batch commits: exactly one batch (the first mark also holds the run's setup).
    per_batch = [b - a for a, b in itertools.pairwise(marks)]
    return {
        "sessions": sessions,
        "messages": messages,
        "batch_size": BATCH_SIZE,
        "agents": AGENTS,
        "sweep": {
            "seconds": round(seconds, 2),
            "rows": rows,
            "rows_per_second": round(rows / seconds),
            "batches": len(marks),
            "statements_per_batch": sorted(set(per_batch)),
        },
        "appends": {"count": len(samples), "errors": len(errors), "first_errors": errors[:3], **latency},
        "left": left,
        "live_sessions_kept": live_kept,
        "targets": {
            "p99": {
                "value": latency["p99_ms"],
                "target": TARGET_P99_MS,
                "met": latency["p99_ms"] is not None and latency["p99_ms"] < TARGET_P99_MS,
            },
            "errors": {"value": len(errors), "met": not errors},
            "constant_statements": {"value": sorted(set(per_batch)), "met": len(set(per_batch)) == 1},
            "all_swept": {"met": left == 0 and live_kept == AGENTS},
        },
    }


def print_table(result: dict[str, Any]) -> None:
    s, a = result["sweep"], result["appends"]
    print(
        report.table(
            [
                "ended sessions",
                "messages",
                "batch",
                "sweep s",
                "rows/s",
                "statements/batch",
                "appends",
                "append median ms",
                "append p99 ms",
                "errors",
            ],
            [
                [
                    f"{result['sessions']:,}",
                    f"{result['messages']:,}",
                    result["batch_size"],
                    f"{s['seconds']:.1f}",
                    f"{s['rows_per_second']:,}",
                    s["statements_per_batch"],
                    a["count"],
                    a["median_ms"],
                    a["p99_ms"],
                    a["errors"],
                ]
            ],
        )
    )
    t = result["targets"]
    print(
        f"append p99 during the sweep {t['p99']['value']} ms (target < {TARGET_P99_MS:.0f} ms) "
        f"{'ok' if t['p99']['met'] else 'MISSED'}"
    )
    print(
        f"errors {t['errors']['value']} {'ok' if t['errors']['met'] else 'MISSED'}; statements per batch "
        f"{t['constant_statements']['value']} {'ok (constant)' if t['constant_statements']['met'] else 'GROW'}; "
        f"{'all ended sessions swept, live ones kept' if t['all_swept']['met'] else 'SWEEP INCOMPLETE'}"
    )
