"""History edits at scale: fork and rewind of a session of 100,000 messages (and rounds), timed,
with every statement counted. A session of 1,000 goes first: the same number of statements for
both shows the work is bulk, not per row."""

from __future__ import annotations

import time
from typing import Any

from benchmarks import data, report

TARGET_SECONDS = 2.0
SIZES = (1_000, 100_000)


def _timed(work) -> dict[str, Any]:
    with report.StatementLog() as log:
        started = time.perf_counter()
        outcome = work()
        seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 3), "statements": len(log), "slowest": log.slowest(), "outcome": outcome}


def run() -> dict[str, Any]:
    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app import services
    from sessions_app.models import Session

    tenant = tenant_get_or_create(slug="bench")
    print(f"history edits: generating sessions of {', '.join(f'{s:,}' for s in SIZES)} messages and rounds")
    for size in SIZES:
        data.sessions_create(tenant=tenant, user_id=f"edits{size}", count=1)
        data.history_fill(
            session=Session.objects.get(tenant=tenant, user_id=f"edits{size}"), messages=size, rounds=size
        )
    data.analyze()
    results = []
    for size in SIZES:
        source = Session.objects.get(tenant=tenant, user_id=f"edits{size}")
        fork = _timed(lambda: services.session_fork(session=source, new_session_id="fork").message_count)
        forked = Session.objects.get(tenant=tenant, user_id=f"edits{size}", session_id="fork")
        half = _timed(
            lambda: services.message_rewind(session=forked, after_seq=size // 2, after_round=size // 2).removed_messages
        )
        whole = _timed(lambda: services.message_rewind(session=source, after_seq=0, after_round=0).removed_messages)
        for name, measured in (
            ("fork (all messages and rounds)", fork),
            ("rewind half of a fork", half),
            ("rewind everything", whole),
        ):
            results.append(
                {"operation": name, "size": size, **measured, "meets_target": measured["seconds"] <= TARGET_SECONDS}
            )
    return {"target_seconds": TARGET_SECONDS, "sizes": list(SIZES), "edits": results}


def print_table(result: dict[str, Any]) -> None:
    rows = [
        [
            e["operation"],
            f"{e['size']:,}",
            e["outcome"],
            e["seconds"],
            e["statements"],
            "ok" if e["meets_target"] else "OVER",
        ]
        for e in result["edits"]
    ]
    headers = [
        "edit",
        "session size",
        "rows copied/removed",
        "seconds",
        "statements",
        f"<= {result['target_seconds']} s",
    ]
    print(report.table(headers, rows))
