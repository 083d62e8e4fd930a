"""Scaling: the cost of each agent operation at history sizes 10 .. 100,000, in process.

Each size has its own user: N sessions, the first of which (``s1``) holds N messages and N
rounds. Sizes are measured interleaved (a batch of one size, then the next, round after round)
so a noisy neighbour slows every size alike instead of biasing the ratio.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable
from typing import Any

from agentstate_site import bulk_data
from benchmarks import report

SIZES = (10, 1_000, 10_000, 100_000)
TARGET_RATIO = 1.3
HISTORY_SESSION = "s1"
# Sessions per listed page: the smallest size's whole list, so every size returns as many rows and
# only the history size differs (the API's default page of 100 costs more per row, at every size).
LIST_PAGE = 10


def _operations(*, tenant, user_id: str, size: int, rng: random.Random) -> dict[str, Callable[[], Any]]:
    """Each operation as the API performs it: resolve the session by its identity, then act. An
    operation that removes data is a pair (timed operation, untimed restore)."""
    from sessions_app import selectors, services

    def session():
        return selectors.session_get(tenant=tenant, user_id=user_id, session_id=HISTORY_SESSION)

    return {
        "export latest round": lambda: selectors.round_export(
            tenant=tenant, user_id=user_id, session_id=HISTORY_SESSION
        ),
        "export one round": lambda: selectors.round_export(
            tenant=tenant, user_id=user_id, session_id=HISTORY_SESSION, round_id=rng.randint(1, size)
        ),
        "recent 50 messages": lambda: selectors.message_recent(session=session(), limit=50),
        # The Agents SDK's get_items(limit=20) and pop_item: one read and one edit each.
        "recent 20 messages": lambda: selectors.message_recent(session=session(), limit=20),
        # Timed: the pop; untimed: putting a message back, so every size keeps its history.
        "pop 1 message": (
            lambda: services.message_pop(session=session()),
            lambda: services.message_append(
                session=session(), messages=[{"role": "assistant", "content": "Put back after a pop."}]
            ),
        ),
        "append 1 message": lambda: services.message_append(
            session=session(), messages=[{"role": "user", "content": "What changed since yesterday?"}]
        ),
        "save auto round": lambda: services.round_save(
            tenant=tenant, user_id=user_id, session_id=HISTORY_SESSION, state={"step": 1, "plan": "answer"}
        ),
        "list sessions page": lambda: list(selectors.session_list(tenant=tenant, user_id=user_id)[: LIST_PAGE + 1]),
    }


def _populate(*, sizes: tuple[int, ...]) -> tuple[Any, dict[int, str]]:
    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app.models import Session

    tenant = tenant_get_or_create(slug="bench")
    users = {}
    for size in sizes:
        started = time.perf_counter()
        user_id = f"u{size}"
        bulk_data.sessions_create(tenant=tenant, user_id=user_id, count=size)
        history = Session.objects.get(tenant=tenant, user_id=user_id, session_id=HISTORY_SESSION)
        bulk_data.history_fill(session=history, messages=size, rounds=size)
        users[size] = user_id
        print(f"  size {size:>7,}: {size:,} sessions, messages and rounds in {time.perf_counter() - started:.1f} s")
    bulk_data.analyze()
    return tenant, users


def run(*, sizes: tuple[int, ...] = SIZES, rounds: int = 10, batch: int = 30) -> dict[str, Any]:
    """Measure every operation at every size; ``rounds`` x ``batch`` samples per pair."""
    print(f"scaling: generating histories of {', '.join(f'{s:,}' for s in sizes)}")
    tenant, users = _populate(sizes=sizes)
    rng = random.Random(6)
    ops_by_size = {size: _operations(tenant=tenant, user_id=users[size], size=size, rng=rng) for size in sizes}
    names = list(ops_by_size[sizes[0]])
    samples: dict[str, dict[int, list[int]]] = {name: {size: [] for size in sizes} for name in names}
    print(f"scaling: {rounds} rounds x {batch} calls per operation and size")
    for round_no in range(rounds + 1):  # round 0 warms caches and connections, not recorded
        for name in names:
            order = sizes[round_no % len(sizes) :] + sizes[: round_no % len(sizes)]
            for size in order:
                op = ops_by_size[size][name]
                op, restore = op if isinstance(op, tuple) else (op, None)
                gc.collect()
                for _ in range(batch):
                    started = time.perf_counter_ns()
                    op()
                    elapsed = time.perf_counter_ns() - started
                    if restore is not None:
                        restore()
                    if round_no:
                        samples[name][size].append(elapsed)
    results = []
    for name in names:
        per_size = {size: report.summarize_ms(samples[name][size]) for size in sizes}
        ratio = per_size[sizes[-1]]["median_ms"] / per_size[sizes[0]]["median_ms"]
        results.append(
            {"operation": name, "sizes": per_size, "ratio": round(ratio, 3), "meets_target": ratio <= TARGET_RATIO}
        )
    return {"target_ratio": TARGET_RATIO, "sizes": list(sizes), "rounds": rounds, "batch": batch, "operations": results}


def print_table(result: dict[str, Any]) -> None:
    sizes = result["sizes"]
    headers = ["operation", *[f"{s:,}: median / p99 ms" for s in sizes], f"ratio (<= {result['target_ratio']})"]
    rows = []
    for op in result["operations"]:
        cells = [f"{op['sizes'][s]['median_ms']:.3f} / {op['sizes'][s]['p99_ms']:.3f}" for s in sizes]
        rows.append([op["operation"], *cells, f"{op['ratio']:.2f} {'ok' if op['meets_target'] else 'OVER'}"])
    print(report.table(headers, rows))
