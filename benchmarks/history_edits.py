"""History edits at scale: fork and rewind of a session of 100,000 messages, timed, with every
statement counted. A session of 1,000 goes first: the same number of statements for both shows the
work is bulk, not per row. Sessions hold a round per ten messages (an agent turn: the user's
message, the model's answer, tool calls and their results); the last case holds as many rounds as
messages, the worst case a fork copies."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from agentstate_site import bulk_data
from benchmarks import report

TARGET_SECONDS = 2.0
# (messages, rounds) of each session forked and rewound.
SIZES = ((1_000, 100), (100_000, 10_000), (100_000, 100_000))


def _timed(work) -> dict[str, Any]:
    with report.StatementLog() as log:
        started = time.perf_counter()
        outcome = work()
        seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 3), "statements": len(log), "slowest": log.slowest(), "outcome": outcome}


def _fork_copies(source) -> int:
    from sessions_app import services

    return services.session_fork(session=source, new_session_id="fork").message_count


def _rewind_removes(session, *, after_seq: int, after_round: int) -> int:
    from sessions_app import services

    return services.message_rewind(session=session, after_seq=after_seq, after_round=after_round).removed_messages


def run() -> dict[str, Any]:
    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app.models import Session

    tenant = tenant_get_or_create(slug="bench")
    print("history edits: generating sessions of " + ", ".join(f"{m:,} messages and {r:,} rounds" for m, r in SIZES))
    for messages, rounds in SIZES:
        user_id = f"edits{messages}-{rounds}"
        bulk_data.sessions_create(tenant=tenant, user_id=user_id, count=1)
        bulk_data.history_fill(
            session=Session.objects.get(tenant=tenant, user_id=user_id), messages=messages, rounds=rounds
        )
    bulk_data.analyze()
    results = []
    for messages, rounds in SIZES:
        user_id = f"edits{messages}-{rounds}"
        source = Session.objects.get(tenant=tenant, user_id=user_id)
        fork = _timed(partial(_fork_copies, source))
        forked = Session.objects.get(tenant=tenant, user_id=user_id, session_id="fork")
        half = _timed(partial(_rewind_removes, forked, after_seq=messages // 2, after_round=rounds // 2))
        whole = _timed(partial(_rewind_removes, source, after_seq=0, after_round=0))
        for name, measured in (
            ("fork (all messages and rounds)", fork),
            ("rewind half of a fork", half),
            ("rewind everything", whole),
        ):
            results.append(
                {
                    "operation": name,
                    "size": messages,
                    "rounds": rounds,
                    **measured,
                    "meets_target": measured["seconds"] <= TARGET_SECONDS,
                }
            )
    return {"target_seconds": TARGET_SECONDS, "sizes": list(SIZES), "edits": results}


def print_table(result: dict[str, Any]) -> None:
    rows = [
        [
            e["operation"],
            f"{e['size']:,}",
            f"{e.get('rounds', e['size']):,}",
            e["outcome"],
            e["seconds"],
            e["statements"],
            "ok" if e["meets_target"] else "OVER",
        ]
        for e in result["edits"]
    ]
    headers = [
        "edit",
        "messages",
        "rounds",
        "messages copied/removed",
        "seconds",
        "statements",
        f"<= {result['target_seconds']} s",
    ]
    print(report.table(headers, rows))
