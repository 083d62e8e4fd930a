"""LangGraph checkpointer: one graph step (put a checkpoint, then get_tuple of the thread's
latest) with 10 and 10,000 checkpoints already in the thread, for AgentStateSaver over HTTP
(gunicorn, sync and async methods) and for the server's share of it in process (the services and
selectors the two requests run), beside LangGraph's own SqliteSaver and AsyncSqliteSaver on a
SQLite file, in the same run. The cost per step must not grow with the thread's length.

Sizes are measured interleaved (a batch at one size, then the other, round after round) so a noisy
neighbour slows both alike.
"""

from __future__ import annotations

import asyncio
import base64
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import report

SIZES = (10, 10_000)
TARGET_RATIO = 1.3
LOG = Path(tempfile.gettempdir()) / "agentstate-bench-langgraph-gunicorn.log"


def _checkpoint(step: int):
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint

    values = {"messages": [f"message {step}", "a reply of a few words"], "step": step}
    return generate_checkpoint(channel_values=values, channel_versions={"messages": step + 1, "step": step + 1})


def _config(thread_id: str, parent: str | None) -> dict[str, Any]:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if parent is not None:
        configurable["checkpoint_id"] = parent
    return {"configurable": configurable}


def _service_put(*, tenant, thread_id: str, checkpoint, parent: str | None, step: int) -> None:
    """What the server runs for AgentStateSaver.put, called in process."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from sessions_app.langgraph import services

    type_, data = JsonPlusSerializer().dumps_typed(checkpoint)
    services.checkpoint_put(
        tenant=tenant,
        thread_id=thread_id,
        user_id=None,
        default_user_id="bench",
        checkpoint_ns="",
        checkpoint_id=checkpoint["id"],
        parent_checkpoint_id=parent,
        checkpoint={"type": type_, "data": base64.b64encode(data).decode(), "rendered": None},
        metadata={"source": "loop", "step": step},
        channel_versions=checkpoint["channel_versions"],
    )


def _fill_server(*, tenant, thread_id: str, size: int) -> str:
    """``size`` checkpoints in a thread, written straight to the database (bulk inserts): the
    same rows AgentStateSaver.put stores. Returns the newest checkpoint id."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from sessions_app.langgraph.models import LangGraphCheckpoint

    serde = JsonPlusSerializer()
    first = _checkpoint(0)
    _service_put(tenant=tenant, thread_id=thread_id, checkpoint=first, parent=None, step=0)
    session_id = LangGraphCheckpoint.objects.get(checkpoint_id=first["id"]).session_id
    parent, rows = first["id"], []
    for step in range(1, size):
        checkpoint = _checkpoint(step)
        type_, data = serde.dumps_typed(checkpoint)
        rows.append(
            LangGraphCheckpoint(
                session_id=session_id,
                tenant=tenant,
                user_id="bench",
                checkpoint_ns="",
                checkpoint_id=checkpoint["id"],
                parent_checkpoint_id=parent,
                step=step,
                source="loop",
                metadata={"source": "loop", "step": step},
                channel_versions=checkpoint["channel_versions"],
                value_type=type_,
                value=data,
            )
        )
        parent = checkpoint["id"]
    LangGraphCheckpoint.objects.bulk_create(rows, batch_size=1000)
    return parent


def _fill_sqlite(saver, *, thread_id: str, size: int) -> str:
    parent = None
    for step in range(size):
        checkpoint = _checkpoint(step)
        parent = saver.put(_config(thread_id, parent), checkpoint, {"source": "loop", "step": step}, {})[
            "configurable"
        ]["checkpoint_id"]
    return parent


def _sync_steps(saver, thread_id: str, parent: str, n: int, samples: list[int]) -> str:
    for _ in range(n):
        checkpoint = _checkpoint(1)
        started = time.perf_counter_ns()
        saver.put(_config(thread_id, parent), checkpoint, {"source": "loop", "step": 1}, checkpoint["channel_versions"])
        found = saver.get_tuple(_config(thread_id, None))
        samples.append(time.perf_counter_ns() - started)
        assert found.checkpoint["id"] == checkpoint["id"]
        parent = checkpoint["id"]
    return parent


def _service_steps(tenant, thread_id: str, parent: str, n: int, samples: list[int]) -> str:
    """The server's share of a step, in process: what the two requests run, without HTTP."""
    from sessions_app.langgraph import selectors

    for _ in range(n):
        checkpoint = _checkpoint(1)
        started = time.perf_counter_ns()
        _service_put(tenant=tenant, thread_id=thread_id, checkpoint=checkpoint, parent=parent, step=1)
        found = selectors.checkpoint_tuple_get(tenant=tenant, thread_id=thread_id, checkpoint_ns="")
        samples.append(time.perf_counter_ns() - started)
        assert found is not None and found.checkpoint.checkpoint_id == checkpoint["id"]
        parent = checkpoint["id"]
    return parent


async def _async_steps(saver, thread_id: str, parent: str, n: int, samples: list[int]) -> str:
    for _ in range(n):
        checkpoint = _checkpoint(1)
        started = time.perf_counter_ns()
        await saver.aput(
            _config(thread_id, parent), checkpoint, {"source": "loop", "step": 1}, checkpoint["channel_versions"]
        )
        found = await saver.aget_tuple(_config(thread_id, None))
        samples.append(time.perf_counter_ns() - started)
        assert found.checkpoint["id"] == checkpoint["id"]
        parent = checkpoint["id"]
    return parent


def run(*, rounds: int = 5, batch: int = 40) -> dict[str, Any]:
    import django

    django.setup()
    import sqlite3

    import aiosqlite
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from agentstate.integrations.langgraph import AgentStateSaver
    from agentstate.tenancy.services import api_key_create, tenant_get_or_create
    from agentstate_site import bulk_data
    from benchmarks.http_load import gunicorn

    tenant = tenant_get_or_create(slug="bench")
    _, key = api_key_create(tenant=tenant, name="langgraph benchmark")
    heads: dict[tuple[str, int], str] = {}
    started = time.perf_counter()
    for size in SIZES:
        heads[("agentstate", size)] = _fill_server(tenant=tenant, thread_id=f"t{size}", size=size)
    bulk_data.analyze()
    fill_server_s = time.perf_counter() - started

    tmp = tempfile.mkdtemp(prefix="agentstate-bench-langgraph-")
    sqlite_path = os.path.join(tmp, "langgraph.sqlite3")
    sqlite_saver = SqliteSaver(sqlite3.connect(sqlite_path, check_same_thread=False))
    sqlite_saver.setup()
    for size in SIZES:
        heads[("sqlite", size)] = _fill_sqlite(sqlite_saver, thread_id=f"t{size}", size=size)

    samples: dict[str, dict[int, list[int]]] = {
        name: {size: [] for size in SIZES}
        for name in (
            "AgentStateSaver (sync)",
            "AgentStateSaver (async)",
            "server side only (in process)",
            "SqliteSaver (sync)",
            "AsyncSqliteSaver (async)",
        )
    }

    async def async_sqlite_round(size: int, parent: str) -> str:
        async with aiosqlite.connect(sqlite_path) as conn:
            saver = AsyncSqliteSaver(conn)
            return await _async_steps(saver, f"t{size}", parent, batch, samples["AsyncSqliteSaver (async)"][size])

    env = {**os.environ}
    with gunicorn(app="agentstate.wsgi:application", env=env, workers=1, threads=1, log=LOG) as (url, _pid):
        sync_saver = AgentStateSaver(url, key, default_user_id="bench")
        async_saver = AgentStateSaver(url, key, default_user_id="bench")
        loop = asyncio.new_event_loop()
        for size in SIZES:  # warm up connections and caches
            heads[("agentstate", size)] = _sync_steps(sync_saver, f"t{size}", heads[("agentstate", size)], 5, [])
        for _ in range(rounds):
            for size in SIZES:
                thread = f"t{size}"
                heads[("agentstate", size)] = _sync_steps(
                    sync_saver, thread, heads[("agentstate", size)], batch, samples["AgentStateSaver (sync)"][size]
                )
                heads[("agentstate", size)] = loop.run_until_complete(
                    _async_steps(
                        async_saver,
                        thread,
                        heads[("agentstate", size)],
                        batch,
                        samples["AgentStateSaver (async)"][size],
                    )
                )
                heads[("agentstate", size)] = _service_steps(
                    tenant, thread, heads[("agentstate", size)], batch, samples["server side only (in process)"][size]
                )
                heads[("sqlite", size)] = _sync_steps(
                    sqlite_saver, thread, heads[("sqlite", size)], batch, samples["SqliteSaver (sync)"][size]
                )
                heads[("sqlite", size)] = loop.run_until_complete(async_sqlite_round(size, heads[("sqlite", size)]))
        loop.run_until_complete(async_saver.aclose())
        loop.close()
        sync_saver.close()

    results = {}
    for name, by_size in samples.items():
        summary = {size: report.summarize_ms(values) for size, values in by_size.items()}
        ratio = summary[SIZES[-1]]["median_ms"] / summary[SIZES[0]]["median_ms"]
        results[name] = {"sizes": {str(s): v for s, v in summary.items()}, "ratio": round(ratio, 3)}
    return {
        "sizes": list(SIZES),
        "target_ratio": TARGET_RATIO,
        "fill_server_s": round(fill_server_s, 1),
        "server": "gunicorn, 1 gthread worker",
        "results": results,
    }


def print_table(result: dict[str, Any]) -> None:
    small, large = (str(s) for s in result["sizes"])
    rows = [
        [name, r["sizes"][small]["median_ms"], r["sizes"][large]["median_ms"], r["sizes"][large]["p99_ms"], r["ratio"]]
        for name, r in result["results"].items()
    ]
    print(
        report.table(
            [
                "saver (put + get_tuple per step)",
                f"median ms @{small}",
                f"median ms @{large}",
                f"p99 ms @{large}",
                f"ratio (target <= {result['target_ratio']})",
            ],
            rows,
        )
    )
