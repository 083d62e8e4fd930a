"""Long-term memory (issue 27): LangGraph's ``AgentStateStore`` against LangGraph's own
``InMemoryStore`` and ``PostgresStore``, and ADK's ``AgentStateMemoryService.search_memory`` against
ADK's own ``InMemoryMemoryService`` and ``SqliteMemoryService``, each on the same data, on PostgreSQL.

Each store holds the same items of one user (``("users", "bench", "memories")``, a value of eight
words and a ``kind`` among ten), filled in batches. The calls are made as a graph's nodes make
them: ``put`` of a new item, ``search`` with a ``filter`` (one kind in ten, top 10) and ``search``
with a ``query`` of two words (top 10). agentstate ranks the items holding either word by the
search engine; LangGraph's stores without an embedding index ignore ``query``, so theirs is the
plain listing: the same call, not the same work (the results column says what each found).

Each ADK memory service holds the same texts as ADK events of that user (100 sessions of 20,
added with ``add_session_to_memory``) and answers ``search_memory`` for the same two words, top 10
(``SqliteMemoryService`` with ``max_results=10``, on a file, FTS5 ranking; ``InMemoryMemoryService``
scans every event). ADK's Vertex AI services (Memory Bank, RAG) need Google Cloud: not measured.

agentstate serves over HTTP (the shipped gunicorn, one worker, on the run's PostgreSQL);
``PostgresStore`` talks to the same server through psycopg; ``InMemoryStore`` is a dict in the
caller. Every (operation, store) is a column; the columns are measured interleaved, one rep each
per round, so machine noise hits them alike; the first round warms connections and is dropped.
The floor, a bare ``GET /livez`` on a kept-alive connection to the same server, is a column too:
what any HTTP call costs on the machine as loaded then.

Forgetting that follows lineage: ``DELETE`` of a REST session with 100 memories made from it
(each a store item whose source is the session, deleted with it in the same request), beside the
delete of a session with none, interleaved with the rest; each round makes a new session (and its
memories) before the timed call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from benchmarks import report
from benchmarks.frameworks import agentstate_server

USER = "bench"
NAMESPACE = ("users", USER, "memories")
WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "po", "ri", "su", "te", "va", "zo") for b in range(50)]  # 500
QUERY = f"{WORDS[7]} {WORDS[123]}"  # two words of the vocabulary, each in about 1.6 % of the items
FULL = {"items": 2_000, "reps": 60}
QUICK = {"items": 200, "reps": 5}
APP = "bench"
SESSION_EVENTS = 20  # ADK events per session added to memory
DERIVED = (0, 100)  # memories made from the session a timed delete deletes
NOT_MEASURED = {
    "VertexAiMemoryBankService": "needs Google Cloud (a Vertex AI Agent Engine)",
    "VertexAiRagMemoryService": "needs Google Cloud (a Vertex AI RAG corpus)",
}


def _value(rng: random.Random, i: int) -> dict[str, Any]:
    return {"text": " ".join(rng.choice(WORDS) for _ in range(8)), "kind": f"k{i % 10}", "n": i}


def _fill(store: Any, items: int) -> None:
    from langgraph.store.base import PutOp

    rng = random.Random(27)  # the same items in every store
    for start in range(0, items, 200):
        store.batch([PutOp(NAMESPACE, f"m{i}", _value(rng, i)) for i in range(start, min(items, start + 200))])


def _columns(store: Any, name: str) -> list[dict[str, Any]]:
    rng = random.Random(26)
    counter = iter(range(10**9))

    def put() -> int:
        store.put(NAMESPACE, f"new{next(counter)}", _value(rng, 0))
        return 0

    def by_filter() -> int:
        return len(store.search(NAMESPACE, filter={"kind": "k3"}, limit=10))

    def by_query() -> int:
        return len(store.search(NAMESPACE, query=QUERY, limit=10))

    calls: dict[str, Callable[[], int]] = {
        "put (a new item)": put,
        "search (filter, top 10)": by_filter,
        f'search (query "{QUERY}", top 10)': by_query,
    }
    return [{"store": name, "operation": op, "call": call, "samples": [], "results": 0} for op, call in calls.items()]


def _sessions(items: int) -> list[Any]:
    """ADK sessions holding the store's texts as user events, ``SESSION_EVENTS`` per session."""
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session
    from google.genai import types

    rng = random.Random(27)  # the store's texts
    texts = [_value(rng, i)["text"] for i in range(items)]
    start = time.time() - items
    sessions = []
    for first in range(0, items, SESSION_EVENTS):
        events = [
            Event(
                id=f"e{i}",
                author="user",
                timestamp=start + i,
                content=types.Content(role="user", parts=[types.Part(text=texts[i])]),
            )
            for i in range(first, min(items, first + SESSION_EVENTS))
        ]
        sessions.append(Session(id=f"s{first // SESSION_EVENTS}", app_name=APP, user_id=USER, events=events))
    return sessions


def _memory_column(loop: asyncio.AbstractEventLoop, service: Any, name: str) -> dict[str, Any]:
    def search() -> int:
        return len(loop.run_until_complete(service.search_memory(app_name=APP, user_id=USER, query=QUERY)).memories)

    operation = f'search_memory ("{QUERY}", top 10)'
    return {"store": name, "operation": operation, "call": search, "samples": [], "results": 0}


def _delete_column(http: httpx.Client, url: str, key: str, derived: int) -> dict[str, Any]:
    """``DELETE`` of a session with ``derived`` memories made from it (made, untimed, by ``prepare``)."""
    headers, made = {"Authorization": f"Api-Key {key}"}, []

    def prepare() -> None:
        session_id = f"forget-{derived}-{len(made)}"
        body = {"user_id": USER, "session_id": session_id}
        http.post(f"{url}/api/v1/sessions/", json=body, headers=headers).raise_for_status()
        source = [{"session_id": session_id}]
        ops = [
            {"op": "put", "namespace": [*NAMESPACE, session_id], "key": str(i), "value": {"i": i}, "sources": source}
            for i in range(derived)
        ]
        if ops:
            http.post(f"{url}/api/v1/store/batch/", json={"ops": ops}, headers=headers).raise_for_status()
        made.append(session_id)

    def delete() -> int:
        response = http.delete(f"{url}/api/v1/users/{USER}/sessions/{made[-1]}/", headers=headers)
        return response.status_code

    operation = f"DELETE a session with {derived} memories made from it"
    column = {"store": "REST API", "operation": operation, "prepare": prepare, "call": delete}
    return {**column, "samples": [], "results": 0}


def _api_key() -> str:
    from agentstate.tenancy.services import api_key_create, tenant_get_or_create

    _, key = api_key_create(tenant=tenant_get_or_create(slug="bench-memory"), name="memory benchmark")
    return key


def run(*, quick: bool = False) -> dict[str, Any]:
    from django.db import connection
    from google.adk.memory import InMemoryMemoryService, SqliteMemoryService
    from langgraph.store.memory import InMemoryStore
    from langgraph.store.postgres import PostgresStore

    from agentstate.integrations.adk_memory import AgentStateMemoryService
    from agentstate.integrations.langgraph_store import AgentStateStore

    if connection.vendor != "postgresql":
        raise SystemExit("memory: PostgresStore is measured on PostgreSQL (DATABASE_URL)")
    scale = QUICK if quick else FULL
    key = _api_key()
    pg_url = os.environ["DATABASE_URL"].replace("postgres://", "postgresql://", 1)
    loop = asyncio.new_event_loop()
    with (
        tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp,
        agentstate_server(Path(tmp)) as (url, _),
        contextlib.ExitStack() as stack,
    ):
        stack.callback(loop.close)
        agentstate = stack.enter_context(AgentStateStore(url, key))
        postgres = stack.enter_context(PostgresStore.from_conn_string(pg_url))
        postgres.setup()
        stores = {
            "AgentStateStore (HTTP)": agentstate,
            "PostgresStore (psycopg)": postgres,
            "InMemoryStore": InMemoryStore(),
        }
        fill_s = {}
        for name, store in stores.items():
            started = time.perf_counter()
            _fill(store, scale["items"])
            fill_s[name] = round(time.perf_counter() - started, 1)
        print(f"memory: {scale['items']:,} items in each store ({fill_s} s)", flush=True)
        services = {
            "AgentStateMemoryService (HTTP)": AgentStateMemoryService(url, key, max_results=10),
            "SqliteMemoryService (FTS5)": SqliteMemoryService(Path(tmp) / "adk-memory.db", max_results=10),
            "InMemoryMemoryService": InMemoryMemoryService(),
        }
        for name, service in services.items():
            if hasattr(service, "close"):
                stack.callback(loop.run_until_complete, service.close())
            started = time.perf_counter()
            for session in _sessions(scale["items"]):
                loop.run_until_complete(service.add_session_to_memory(session))
            fill_s[name] = round(time.perf_counter() - started, 1)
        filled = {name: fill_s[name] for name in services}
        print(f"memory: {scale['items']:,} ADK events in each memory service ({filled} s)", flush=True)
        http = stack.enter_context(httpx.Client())
        floor = {"store": "floor", "operation": "GET /livez (kept-alive)", "samples": [], "results": 0}
        floor["call"] = lambda: 0 if http.get(url + "/livez").status_code == 200 else 1
        columns = [
            floor,
            *(column for name, store in stores.items() for column in _columns(store, name)),
            *(_memory_column(loop, service, name) for name, service in services.items()),
            *(_delete_column(http, url, key, derived) for derived in DERIVED),
        ]
        for rep in range(scale["reps"] + 1):  # the first round warms connections and caches
            for column in columns:
                if "prepare" in column:
                    column["prepare"]()
                started = time.perf_counter_ns()
                column["results"] = column["call"]()
                if rep:
                    column["samples"].append(time.perf_counter_ns() - started)
    return {
        "quick": quick,
        "items": scale["items"],
        "reps": scale["reps"],
        "fill_s": fill_s,
        "not_measured": NOT_MEASURED,
        "columns": [
            {
                "store": c["store"],
                "operation": c["operation"],
                "results": c["results"],
                **report.summarize_ms(c["samples"]),
            }
            for c in columns
        ],
    }


def print_table(result: dict[str, Any]) -> None:
    rows = [
        [c["operation"], c["store"], c["results"], f"{c['median_ms']:.2f}", f"{c['p99_ms']:.2f}"]
        for c in sorted(result["columns"], key=lambda c: c["operation"])
    ]
    print(f"{result['items']:,} items, {result['reps']} reps interleaved")
    print(report.table(["operation", "store", "results", "median ms", "p99 ms"], rows))
