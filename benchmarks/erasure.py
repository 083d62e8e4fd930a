"""Erasure at scale: one subject holding 100,000 rows (messages, rounds, user data) erased with
the product's erasure workflow, timed, with every statement counted. A subject with 1,000 rows
is erased first: the same number of statements for both shows the work is bulk, not per row.
A bystander with as much data must keep all of it."""

from __future__ import annotations

import time
from typing import Any

from agentstate_site import bulk_data
from benchmarks import report

TARGET_SECONDS = 10.0
# (sessions, messages per session, rounds per session, user data keys): 1,000 and 100,000 rows.
SUBJECTS = {"small": (2, 300, 100, 200), "large": (10, 5_000, 2_000, 30_000)}


def _subject(tenant, user_id: str, sessions: int, messages: int, rounds: int, user_data: int) -> int:
    from sessions_app.models import Session

    bulk_data.sessions_create(tenant=tenant, user_id=user_id, count=sessions)
    for session in Session.objects.filter(tenant=tenant, user_id=user_id):
        bulk_data.history_fill(session=session, messages=messages, rounds=rounds)
    bulk_data.user_data_create(tenant=tenant, user_id=user_id, count=user_data)
    return sessions * (messages + rounds) + user_data


def _erase(tenant, user_id: str) -> dict[str, Any]:
    from userdata_app import erasure
    from userdata_app.models import ErasureRequest

    request = erasure.erasure_request_create(
        subjects=[(tenant, user_id)],
        scope=ErasureRequest.Scope.EVERYTHING,
        requested_by="benchmark",
        reason="benchmark",
    )
    erasure.erasure_request_verify(request=request, identity_check="benchmark")
    with report.StatementLog() as log:
        started = time.perf_counter()
        receipt = erasure.erasure_execute(request=request)
        seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 3),
        "statements": len(log),
        "slowest": log.slowest(),
        "counts": dict(receipt.counts),
    }


def run() -> dict[str, Any]:
    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app.models import Message, Round
    from userdata_app.models import UserDatum

    tenant = tenant_get_or_create(slug="bench")
    print("erasure: generating subjects of 1,000 and 100,000 rows and a bystander of 100,000")
    for name, shape in SUBJECTS.items():
        _subject(tenant, f"subject-{name}", *shape)
    bystander_rows = _subject(tenant, "bystander", *SUBJECTS["large"])
    _subject(tenant, "warm-up", 1, 1, 1, 1)
    bulk_data.analyze()
    _erase(tenant, "warm-up")  # one-time lookups (content types) are cached from here on

    def rows_of(user_id: str) -> int:
        return sum(
            model.objects.filter(tenant=tenant, user_id=user_id).count() for model in (Message, Round, UserDatum)
        )

    results = {}
    for name in SUBJECTS:
        before = rows_of(f"subject-{name}")
        results[name] = {"rows": before, **_erase(tenant, f"subject-{name}"), "left": rows_of(f"subject-{name}")}
    kept = rows_of("bystander")
    large, small = results["large"], results["small"]
    return {
        "subjects": results,
        "bystander": {"rows": bystander_rows, "kept": kept},
        "targets": {
            "seconds": {"value": large["seconds"], "target": TARGET_SECONDS, "met": large["seconds"] < TARGET_SECONDS},
            "bounded_statements": {
                "value": [small["statements"], large["statements"]],
                "met": small["statements"] == large["statements"],
            },
            "bystander_untouched": {"met": kept == bystander_rows},
            "nothing_left": {"met": not any(r["left"] for r in results.values())},
        },
    }


def print_table(result: dict[str, Any]) -> None:
    rows = [
        [
            name,
            f"{r['rows']:,}",
            r["statements"],
            f"{r['seconds']:.2f}",
            r["left"],
            ", ".join(f"{k} {v:,}" for k, v in r["counts"].items() if v),
        ]
        for name, r in result["subjects"].items()
    ]
    print(report.table(["subject", "rows", "statements", "seconds", "rows left", "receipt"], rows))
    t = result["targets"]
    print(
        f"100,000 rows erased in {t['seconds']['value']:.2f} s (target < {TARGET_SECONDS:.0f} s) "
        f"{'ok' if t['seconds']['met'] else 'MISSED'}"
    )
    print(
        f"statements 1,000 vs 100,000 rows: {t['bounded_statements']['value']} "
        f"{'ok (bounded)' if t['bounded_statements']['met'] else 'GROW'}"
    )
    b = result["bystander"]
    print(f"bystander kept {b['kept']:,} of {b['rows']:,} rows {'ok' if t['bystander_untouched']['met'] else 'MISSED'}")
