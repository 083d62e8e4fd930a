"""Search over message history at scale (issue 27): one user whose history is the whole tenant's
(the worst case for a per-user search), 10 sessions, a tenant of each size, all in one table, the
sizes searched in turns; the top 20 by rank of
``selectors.message_search`` (the API's selector, in process), for two rare words found together in
0.1 % of messages and for one word in 10 %. Target: p99 under 50 ms on PostgreSQL, flat with size.

Also what the index costs an append: single-message appends to a session of the largest history up
to ``APPEND_SIZE``,
in blocks alternating with and without the index (PostgreSQL: the generated column and its GIN
index dropped and rebuilt between blocks; SQLite: the FTS5 table and its triggers), so drift on a
shared machine hits both alike.
"""

from __future__ import annotations

import random
import time
from typing import Any

from django.db import connection, transaction

from agentstate_site import bulk_data
from benchmarks import report

TARGET_P99_MS = 50.0
SIZES = (10_000, 100_000, 1_000_000)
SESSIONS = 10
SEARCHES = 200
APPEND_BLOCKS, APPEND_BLOCK = 6, 100
APPEND_SIZE = 100_000  # the append cost is measured beside the largest history up to this size
APPENDS = "appends"  # the session the append cost is measured on: not part of the searched history
QUERIES = {
    "two rare words (0.1 %)": lambda rng: "topic{0} code{0}".format(rng.randrange(1000)),
    "one word in 10 %": lambda rng: "lisbon",
}


def _content() -> str:
    """Message i: topic/code words shared by every 1,000th message, 'lisbon' in every 10th."""
    return bulk_data.json_sql(
        "'\"Message ' || i || ' of a long conversation about ' || "
        "CASE WHEN i %% 10 = 0 THEN 'lisbon' ELSE 'weather' END || "
        "' topic' || (i %% 1000) || ' and code' || (i %% 1000) || ', as long as a short turn.\"'"
    )


def _fill(tenant, user_id: str, size: int) -> None:
    from sessions_app.models import Message, Session

    bulk_data.sessions_create(tenant=tenant, user_id=user_id, count=SESSIONS)
    for session in Session.objects.filter(tenant=tenant, user_id=user_id):
        with transaction.atomic():
            if connection.vendor == "postgresql":  # 100,000 rows and their GIN entries outlast the app's bound
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL statement_timeout = 0")
            bulk_data.insert_series(
                model=Message,
                count=size // SESSIONS,
                values={
                    "session_id": "%s",
                    "tenant_id": "%s",
                    "user_id": "%s",
                    "seq": "i",
                    "role": "'user'",
                    "type": "'message'",
                    "status": "''",
                    "name": "''",
                    "content": _content(),
                    "metadata": bulk_data.json_sql("'{}'"),
                    "created_at": "CURRENT_TIMESTAMP",
                },
                params=[session.pk, tenant.pk, user_id],
            )


def _searches(tenants: dict[int, Any], user_id: str) -> list[dict[str, Any]]:
    """Each query at every size, the sizes taking turns search by search, so drift on a shared
    machine hits every size alike; every tenant's messages are in the table meanwhile, so a small
    tenant is searched beside the large ones, as it is in a shared service."""
    from sessions_app import selectors

    rng = random.Random(27)
    results = []
    for name, make in QUERIES.items():
        samples: dict[int, list[int]] = {size: [] for size in tenants}
        found: dict[int, int] = {}
        for rep in range(SEARCHES + 1):  # the first round warms
            for size, tenant in tenants.items():
                query = make(rng)
                started = time.perf_counter_ns()
                found[size] = len(selectors.message_search(tenant=tenant, user_id=user_id, query=query, limit=20))
                if rep:
                    samples[size].append(time.perf_counter_ns() - started)
        results += [
            {"query": name, "messages": size, **report.summarize_ms(samples[size]), "results": found[size]}
            for size in tenants
        ]
    return results


def _append_cost(tenant, user_id: str) -> dict[str, Any]:
    from sessions_app import services

    session = services.session_create(tenant=tenant, user_id=user_id, session_id=APPENDS)
    with_index: list[int] = []
    without: list[int] = []
    for block in range(APPEND_BLOCKS * 2):
        indexed = block % 2 == 1  # the index exists: drop it first
        _index_set(on=indexed)
        samples = with_index if indexed else without
        for n in range(APPEND_BLOCK):
            started = time.perf_counter_ns()
            services.message_append(session=session, messages=[{"role": "user", "content": f"appended {block} {n}"}])
            samples.append(time.perf_counter_ns() - started)
    return {"with index": report.summarize_ms(with_index), "without index": report.summarize_ms(without)}


def _index_set(*, on: bool) -> None:
    """Create or drop the messages' text index (the migration's own statements)."""
    from agentstate.search.schema import json_text_index_sql
    from sessions_app.selectors.search import MESSAGE_INDEX

    create, drop = json_text_index_sql(
        table="sessions_app_message", column="content", pg_index="message_search", owner=MESSAGE_INDEX.pg_owner
    )
    if connection.vendor == "postgresql":
        statements = [s.replace(" CONCURRENTLY", "") for s in (create if on else drop)["postgresql"]]
    else:
        statements = create["sqlite"][:4] if on else drop["sqlite"]
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def run(*, sizes: tuple[int, ...] = SIZES, reuse: bool = False) -> dict[str, Any]:
    """``reuse``: a tenant a kept run filled is searched as it is, and the append cost is not
    measured (it drops and rebuilds the index of every message stored, every size's in a kept
    database)."""
    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app.models import Message

    tenants = {}
    # Rebuilding the index between blocks is quick up to APPEND_SIZE messages.
    append_size = max((size for size in sizes if size <= APPEND_SIZE), default=None)
    append: dict[str, Any] = {}
    append_messages = 0
    for size in sizes:
        tenant = tenant_get_or_create(slug=f"search{size}")
        stored = (
            Message.objects.filter(tenant=tenant, user_id="reader").exclude(session__session_id=APPENDS).count()
            if reuse
            else 0
        )
        if stored == size:
            print(f"search: the tenant of {size:,} messages a kept run filled")
        elif stored:
            raise SystemExit(f"search: the kept tenant of {size:,} holds {stored:,} messages; run without --reuse-db")
        else:
            print(f"search: filling a tenant of {size:,} messages")
            _fill(tenant, "reader", size)
        tenants[size] = tenant
        if size == append_size and not reuse:
            bulk_data.analyze()
            append, append_messages = _append_cost(tenant, "reader"), size
    bulk_data.analyze()
    return {
        "database": connection.vendor,
        "target_p99_ms": TARGET_P99_MS,
        "searches": _searches(tenants, "reader"),
        "append": append,
        "append_messages": append_messages,
    }


def print_table(result: dict[str, Any]) -> None:
    rows = [
        [
            r["query"],
            f"{r['messages']:,}",
            r["results"],
            r["median_ms"],
            r["p99_ms"],
            "ok" if r["p99_ms"] <= result["target_p99_ms"] else "OVER",
        ]
        for r in result["searches"]
    ]
    print(report.table(["query (top 20)", "messages", "results", "median ms", "p99 ms", "p99 < 50 ms"], rows))
    append = result["append"]
    print(
        report.table(
            ["single-message append", "median ms", "p99 ms"],
            [[name, m["median_ms"], m["p99_ms"]] for name, m in append.items()],
        )
    )
