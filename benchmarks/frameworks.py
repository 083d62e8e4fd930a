"""Framework backends through each framework's own interface (issue 26), on PostgreSQL.

Each framework's calls are made the way its users make them, against agentstate (its adapter,
over HTTP to gunicorn with one worker on the run's PostgreSQL) and against the framework's own
database store on the same server; the framework's in-process SQLite store is measured beside,
not targeted:

- Google ADK: ``AgentStateSessionService`` / ``DatabaseSessionService`` (asyncpg) /
  ``SqliteSessionService``: create_session, append_event (without a state delta, and with a
  session key and a ``user:`` key in it), get_session (recent 20 and whole),
  list_sessions (a user with 300 sessions) and a turn (whole get_session + 4 append_event) at
  100 and 2,000 events.
- LangGraph: ``AgentStateSaver`` / ``PostgresSaver`` / ``SqliteSaver`` under one 2-node graph
  whose state grows by a question and a reply of 200 characters a step: a graph step (one
  ``invoke``) and ``get_state_history`` of the 50 newest at 10 and 1,000 steps.
- OpenAI Agents SDK: ``AgentStateSession`` / ``SQLAlchemySession`` (asyncpg) / ``SQLiteSession``:
  add_items (2 items), get_items (limit 20 and whole), pop_item and a ``Runner`` turn with a
  scripted model and one tool call, at 100 and 2,000 items.

Every (operation, size, store) is a column; the columns are measured interleaved, one rep each per
round, so machine noise hits them alike; the floor, a bare ``GET /livez`` on a kept-alive
connection to the same server, is a column too. The HTTP requests agentstate's adapters make are
counted per rep (a counting httpx transport, passed as each adapter's ``transport``), the CPU of
the caller and of gunicorn's worker is read around each rep, and the targets are computed from the
run (``targets``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import operator
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

import httpx

from benchmarks import report
from benchmarks.http_load import documented_proxy, gunicorn

ADK, LANGGRAPH, SDK, HTTP = "Google ADK", "LangGraph", "OpenAI Agents SDK", "HTTP"
AGENTSTATE, PEER, BESIDE = "agentstate", "peer", "beside"
APP, USER = "bench_app", "bench-user"
RECENT = 20  # ADK's and the SDK's recent read
HISTORY_LIMIT = 50  # LangGraph's get_state_history(limit=...)
TURN_CHARS = 200  # a LangGraph step adds a question and a reply of this many characters


@dataclass(frozen=True)
class Scale:
    """How much a run measures: reps per column, and each framework's (small, large) sizes."""

    reps: int
    adk_events: tuple[int, int]
    adk_listed: int
    langgraph_steps: tuple[int, int]
    sdk_items: tuple[int, int]


FULL = Scale(reps=15, adk_events=(100, 2_000), adk_listed=300, langgraph_steps=(10, 1_000), sdk_items=(100, 2_000))
QUICK = Scale(reps=3, adk_events=(10, 40), adk_listed=10, langgraph_steps=(3, 15), sdk_items=(10, 40))

# "Beat the peer outright" (issue 26): (framework, operation, which size, least peer/agentstate).
SPEEDUPS = (
    (ADK, "turn (get_session + 4 append_event)", 1, 3.0),
    (LANGGRAPH, f"get_state_history (newest {HISTORY_LIMIT})", 1, 1.0),
    (SDK, "get_items (whole)", 1, 1.0),
)
STEP = "graph step (invoke)"
APPEND_USER = "append_event (user: state delta)"
STEP_RATIO = 1.3  # a LangGraph step's cost at the large size over the small one, at most


class RequestCount:
    """The HTTP requests an adapter sends, counted on the way into the transports the clients ship
    with (``blocking_transport``, ``async_transport``): what is measured is what a user runs."""

    def __init__(self) -> None:
        from agentstate.client.clients import async_transport, blocking_transport

        self.count = 0
        owner, shipped, shipped_async = self, blocking_transport(), async_transport()

        class Sync(httpx.BaseTransport):
            def handle_request(self, request: httpx.Request) -> httpx.Response:
                owner.count += 1
                return shipped.handle_request(request)

            def close(self) -> None:
                shipped.close()

        class Async(httpx.AsyncBaseTransport):
            async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
                owner.count += 1
                return await shipped_async.handle_async_request(request)

            async def aclose(self) -> None:
                await shipped_async.aclose()

        self.sync, self.async_ = Sync(), Async()


class WorkerCPU:
    """The CPU time gunicorn's one worker has used, every thread of it (/proc/<pid>/task/*/schedstat,
    in nanoseconds): what the server spent on a call, apart from PostgreSQL and the waits."""

    def __init__(self, master_pid: int) -> None:
        children = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
        assert len(children) == 1, f"gunicorn runs {len(children)} workers, not one"
        self.tasks = Path(f"/proc/{children[0]}/task")

    def ns(self) -> int:
        total = 0
        for task in self.tasks.iterdir():
            with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
                total += int((task / "schedstat").read_text().split()[0])
        return total


@dataclass
class Column:
    """One (framework, operation, size, store): its call and what each rep took."""

    framework: str
    operation: str
    size: int | None
    role: str  # AGENTSTATE, PEER or BESIDE
    store: str
    call: Callable[[], Any]  # one rep; may return an awaitable
    counter: RequestCount | None = None  # agentstate's columns only
    server: WorkerCPU | None = None  # idem
    samples: list[int] = field(default_factory=list)
    caller_cpu: list[int] = field(default_factory=list)
    server_cpu: list[int] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)

    def rep(self, loop: asyncio.AbstractEventLoop, *, keep: bool) -> None:
        before = self.counter.count if self.counter else 0
        server = self.server.ns() if self.server else 0
        cpu = time.process_time_ns()
        started = time.perf_counter_ns()
        result = self.call()
        if inspect.isawaitable(result):
            loop.run_until_complete(result)
        elapsed = time.perf_counter_ns() - started
        cpu = time.process_time_ns() - cpu
        if keep:
            self.samples.append(elapsed)
            self.caller_cpu.append(cpu)
            if self.server:
                self.server_cpu.append(self.server.ns() - server)
            if self.counter:
                self.requests.append(self.counter.count - before)

    def summary(self) -> dict[str, Any]:
        def median_ms(samples: list[int]) -> float | None:
            return round(statistics.median(samples) / 1e6, 4) if samples else None

        return {
            "framework": self.framework,
            "operation": self.operation,
            "size": self.size,
            "role": self.role,
            "store": self.store,
            **report.summarize_ms(self.samples),
            # The caller's CPU (the framework, the adapter or the store's driver, httpx) and the
            # worker's; the rest of the wall time is PostgreSQL, the network and waiting for a core.
            "caller_cpu_ms": median_ms(self.caller_cpu),
            "server_cpu_ms": median_ms(self.server_cpu),
            "requests": statistics.median(self.requests) if self.requests else None,
        }


# --- Google ADK ---------------------------------------------------------------------------------


def _adk_event(i: int):
    from google.adk.events.event import Event
    from google.genai import types

    role = "user" if i % 2 else "model"
    return Event(
        author="user" if i % 2 else "agent",
        invocation_id=f"inv-{i // 2}",
        content=types.Content(role=role, parts=[types.Part(text=f"Message {i}, about as long as a short chat turn.")]),
    )


def _adk_user_event(i: int):
    """A tool's answer as ADK's Runner appends it: a state delta with a session key and a ``user:``
    key (the user's data, stored apart from the session's)."""
    from google.adk.events.event_actions import EventActions

    event = _adk_event(i)
    event.actions = EventActions(state_delta={"lookups": i, "user:last_city": f"City {i % 7}"})
    return event


def _adk_turn_events(turn: int) -> list[Any]:
    """One turn with a tool call, as ADK's Runner appends it: the question, the call, its
    response with a state delta, the answer."""
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    def content(role: str, part: types.Part) -> types.Content:
        return types.Content(role=role, parts=[part])

    call = types.FunctionCall(id=f"call-{turn}", name="get_weather", args={"city": "Paris"})
    result = types.FunctionResponse(id=f"call-{turn}", name="get_weather", response={"forecast": "sunny", "c": 21})
    invocation = f"turn-{turn}"
    return [
        Event(author="user", invocation_id=invocation, content=content("user", types.Part(text=f"Weather? ({turn})"))),
        Event(author="agent", invocation_id=invocation, content=content("model", types.Part(function_call=call))),
        Event(
            author="agent",
            invocation_id=invocation,
            content=content("user", types.Part(function_response=result)),
            actions=EventActions(state_delta={"lookups": turn, "user:last_city": "Paris"}),
        ),
        Event(author="agent", invocation_id=invocation, content=content("model", types.Part(text="Sunny, 21 °C."))),
    ]


def _adk_columns(
    loop: asyncio.AbstractEventLoop, service: Any, *, role: str, store: str, scale: Scale, counter: RequestCount | None
) -> list[Column]:
    from google.adk.sessions.base_session_service import GetSessionConfig

    numbers = itertools.count(10**6)
    latest: dict[int, Any] = {}  # the session object each size's appends and turns go on (ADK refuses a stale one)

    async def fill() -> None:
        for size in scale.adk_events:
            session = await service.create_session(app_name=APP, user_id=USER, session_id=f"events-{size}")
            for i in range(size):
                await service.append_event(session, _adk_event(i))
            latest[size] = session
        for i in range(scale.adk_listed):
            await service.create_session(app_name=APP, user_id="lister", session_id=f"listed-{i}")

    loop.run_until_complete(fill())

    def get(size: int, config: Any = None):
        return service.get_session(app_name=APP, user_id=USER, session_id=f"events-{size}", config=config)

    async def append(size: int, event: Callable[[int], Any] = _adk_event) -> None:
        await service.append_event(latest[size], event(next(numbers)))

    async def whole(size: int) -> None:
        session = await get(size)
        assert len(session.events) >= size

    async def turn(size: int) -> None:
        session = latest[size] = await get(size)
        for event in _adk_turn_events(next(numbers)):
            await service.append_event(session, event)

    def column(operation: str, call: Callable[[], Any], size: int | None = None) -> Column:
        return Column(ADK, operation, size, role, store, call, counter)

    columns = [
        column("create_session", lambda: service.create_session(app_name=APP, user_id="creator")),
        column(
            f"list_sessions ({scale.adk_listed} sessions)",
            lambda: service.list_sessions(app_name=APP, user_id="lister"),
        ),
    ]
    for size in scale.adk_events:
        columns += [
            column("append_event", lambda size=size: append(size), size),
            column(APPEND_USER, lambda size=size: append(size, _adk_user_event), size),
            column(
                f"get_session (recent {RECENT})",
                lambda size=size: get(size, GetSessionConfig(num_recent_events=RECENT)),
                size,
            ),
            column("get_session (whole)", lambda size=size: whole(size), size),
            column("turn (get_session + 4 append_event)", lambda size=size: turn(size), size),
        ]
    return columns


def _adk(
    stack: contextlib.ExitStack,
    loop,
    *,
    caches: dict[str, Callable[[], dict[str, int]]],
    url: str,
    key: str,
    pg_url: str,
    tmp: Path,
    scale: Scale,
) -> list[Column]:
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    from agentstate.integrations.adk import AgentStateSessionService

    counter = RequestCount()
    agentstate = AgentStateSessionService(url, key, transport=counter.async_)
    caches[ADK] = agentstate.cache_info  # its read cache's hits and size, read once the run is over
    database = DatabaseSessionService(db_url="postgresql+asyncpg://" + pg_url.split("://", 1)[1])
    stack.callback(lambda: loop.run_until_complete(agentstate.close()))
    stack.callback(lambda: loop.run_until_complete(database.db_engine.dispose()))
    return [
        *_adk_columns(
            loop, agentstate, role=AGENTSTATE, store="AgentStateSessionService", scale=scale, counter=counter
        ),
        *_adk_columns(
            loop, database, role=PEER, store="DatabaseSessionService (PostgreSQL, asyncpg)", scale=scale, counter=None
        ),
        *_adk_columns(
            loop,
            SqliteSessionService(db_path=str(tmp / "adk.sqlite3")),
            role=BESIDE,
            store="SqliteSessionService (SQLite file)",
            scale=scale,
            counter=None,
        ),
    ]


# --- LangGraph ----------------------------------------------------------------------------------


class _GraphState(TypedDict):
    messages: Annotated[list[str], operator.add]  # grows with the thread, as a chat's history does
    steps: int


def _graph(checkpointer: Any):
    """Two nodes, as an agent and its tool: each step adds a question and a reply to the state."""
    from langgraph.graph import END, START, StateGraph

    def agent(state: _GraphState) -> dict[str, Any]:
        return {"messages": [f"A reply to {state['messages'][-1].rstrip('?')}".ljust(TURN_CHARS, ".")]}

    def tool(state: _GraphState) -> dict[str, Any]:
        return {"steps": state.get("steps", 0) + 1}

    builder = StateGraph(_GraphState)
    builder.add_node("agent", agent)
    builder.add_node("tool", tool)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "tool")
    builder.add_edge("tool", END)
    return builder.compile(checkpointer=checkpointer)


def _langgraph_columns(checkpointer: Any, *, role: str, store: str, scale: Scale, counter: RequestCount | None):
    graph = _graph(checkpointer)
    numbers = itertools.count()

    def config(size: int) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"thread-{size}", "user_id": USER}}

    def step(size: int) -> None:
        graph.invoke({"messages": [f"question {next(numbers)}".ljust(TURN_CHARS, "?")]}, config(size))

    def history(size: int) -> None:
        assert list(graph.get_state_history(config(size), limit=HISTORY_LIMIT))

    for size in scale.langgraph_steps:
        for _ in range(size):
            step(size)
    columns = []
    for size in scale.langgraph_steps:
        columns += [
            Column(LANGGRAPH, STEP, size, role, store, lambda size=size: step(size), counter),
            Column(
                LANGGRAPH,
                f"get_state_history (newest {HISTORY_LIMIT})",
                size,
                role,
                store,
                lambda size=size: history(size),
                counter,
            ),
        ]
    return columns


def _langgraph(stack: contextlib.ExitStack, *, url: str, key: str, pg_url: str, tmp: Path, scale: Scale):
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from agentstate.integrations.langgraph import AgentStateSaver

    counter = RequestCount()
    agentstate = stack.enter_context(AgentStateSaver(url, key, default_user_id=USER, transport=counter.sync))
    postgres = stack.enter_context(PostgresSaver.from_conn_string(pg_url))
    postgres.setup()
    sqlite = SqliteSaver(
        stack.enter_context(contextlib.closing(sqlite3.connect(tmp / "langgraph.sqlite3", check_same_thread=False)))
    )
    sqlite.setup()
    return [
        *_langgraph_columns(agentstate, role=AGENTSTATE, store="AgentStateSaver (sync)", scale=scale, counter=counter),
        *_langgraph_columns(postgres, role=PEER, store="PostgresSaver (psycopg)", scale=scale, counter=None),
        *_langgraph_columns(sqlite, role=BESIDE, store="SqliteSaver (SQLite file)", scale=scale, counter=None),
    ]


# --- OpenAI Agents SDK --------------------------------------------------------------------------


def _sdk_item(i: int) -> dict[str, Any]:
    if i % 2:
        return {"role": "user", "content": f"Question {i}, about as long as a short chat turn."}
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{i}",
        "status": "completed",
        "content": [{"type": "output_text", "text": f"Answer {i}, a few words.", "annotations": []}],
    }


def _sdk_columns(
    loop: asyncio.AbstractEventLoop, make: Callable[[str], Any], *, role: str, store: str, scale: Scale, counter
) -> list[Column]:
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    numbers = itertools.count(10**6)
    sessions = {size: make(f"chat-{size}") for size in scale.sdk_items}

    async def fill() -> None:
        for size, session in sessions.items():
            for start in range(0, size, 100):
                await session.add_items([_sdk_item(i) for i in range(start, min(size, start + 100))])

    loop.run_until_complete(fill())

    async def whole(size: int) -> None:
        assert len(await sessions[size].get_items()) >= size

    async def turn(size: int) -> None:
        n = next(numbers)
        script = [
            [function_call("get_weather", {"city": "Paris"}, call_id=f"call-{n}")],
            [assistant_message("Sunny in Paris.", item_id=f"answer-{n}")],
        ]
        agent = Agent(name="bench", instructions="help", model=ScriptedModel(script), tools=[get_weather])
        await Runner.run(agent, f"Weather in Paris? ({n})", session=sessions[size])

    large = scale.sdk_items[-1]

    def column(operation: str, call: Callable[[], Any], size: int) -> Column:
        return Column(SDK, operation, size, role, store, call, counter)

    columns = [
        column("add_items (2 items)", lambda: sessions[large].add_items([_sdk_item(1), _sdk_item(2)]), large),
        column("pop_item", lambda: sessions[large].pop_item(), large),
    ]
    for size in scale.sdk_items:
        columns += [
            column(f"get_items (limit {RECENT})", lambda size=size: sessions[size].get_items(limit=RECENT), size),
            column("get_items (whole)", lambda size=size: whole(size), size),
            column("Runner turn (scripted model, 1 tool call)", lambda size=size: turn(size), size),
        ]
    return columns


def _sdk(stack: contextlib.ExitStack, loop, *, caches, url: str, key: str, pg_url: str, tmp: Path, scale: Scale):
    from agents import SQLiteSession, set_tracing_disabled
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    from agentstate.integrations.openai_agents import AgentStateSession

    set_tracing_disabled(True)
    counter = RequestCount()
    engine = create_async_engine("postgresql+asyncpg://" + pg_url.split("://", 1)[1])
    stack.callback(lambda: loop.run_until_complete(engine.dispose()))
    opened: list[Any] = []

    def agentstate(session_id: str) -> Any:
        session = AgentStateSession(session_id, base_url=url, api_key=key, user_id=USER, transport=counter.async_)
        opened.append(session)
        return session

    stack.callback(lambda: [loop.run_until_complete(session.aclose()) for session in opened])
    # What the session objects keep of their last whole read: hits and size, summed, once the run is over.
    held = ("hits", "misses", "items", "chars")
    caches[SDK] = lambda: {name: sum(session.cache_info()[name] for session in opened) for name in held}
    return [
        *_sdk_columns(loop, agentstate, role=AGENTSTATE, store="AgentStateSession", scale=scale, counter=counter),
        *_sdk_columns(
            loop,
            lambda sid: SQLAlchemySession(sid, engine=engine, create_tables=True),
            role=PEER,
            store="SQLAlchemySession (PostgreSQL, asyncpg)",
            scale=scale,
            counter=None,
        ),
        *_sdk_columns(
            loop,
            lambda sid: SQLiteSession(sid, db_path=tmp / "sdk.sqlite3"),
            role=BESIDE,
            store="SQLiteSession (SQLite file)",
            scale=scale,
            counter=None,
        ),
    ]


# --- The run ------------------------------------------------------------------------------------


def _api_key() -> str:
    from agentstate.tenancy.services import api_key_create, tenant_get_or_create

    _, key = api_key_create(tenant=tenant_get_or_create(slug="bench-frameworks"), name="frameworks benchmark")
    return key


def _floor(stack: contextlib.ExitStack, url: str) -> Column:
    http = stack.enter_context(httpx.Client())

    def livez() -> None:
        assert http.get(url + "/livez").status_code == 200

    return Column(HTTP, "GET /livez (the floor)", None, AGENTSTATE, "gunicorn, kept-alive connection", livez)


def targets(columns: list[dict[str, Any]], floor_ms: float, scale: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, computed from the run's medians: work above the floor (agentstate's
    median less its requests times the floor) at most the peer's median, per operation and size;
    the speedups over the peer; a LangGraph step flat in the thread's length."""
    by_key = {(c["framework"], c["operation"], c["size"], c["role"]): c for c in columns}
    found = []
    for (framework, operation, size, role), ours in by_key.items():
        peer = by_key.get((framework, operation, size, PEER))
        if role != AGENTSTATE or peer is None:
            continue
        above = ours["median_ms"] - (ours["requests"] or 0) * floor_ms
        found.append(
            {
                "target": "work above the floor ≤ peer",
                "framework": framework,
                "operation": operation,
                "size": size,
                "value": round(above, 3),
                "limit": peer["median_ms"],
                "met": above <= peer["median_ms"],
            }
        )
    sizes = {ADK: scale["adk_events"], LANGGRAPH: scale["langgraph_steps"], SDK: scale["sdk_items"]}
    for framework, operation, which, least in SPEEDUPS:
        size = sizes[framework][which]
        if (framework, operation, size, AGENTSTATE) not in by_key:  # a run of another framework alone
            continue
        ours, peer = by_key[(framework, operation, size, AGENTSTATE)], by_key[(framework, operation, size, PEER)]
        speedup = peer["median_ms"] / ours["median_ms"]
        found.append(
            {
                "target": f"≥ {least:g}× the peer",
                "framework": framework,
                "operation": operation,
                "size": size,
                "value": round(speedup, 3),
                "limit": least,
                "met": speedup >= least,
            }
        )
    if (LANGGRAPH, STEP, sizes[LANGGRAPH][0], AGENTSTATE) not in by_key:
        return found
    small, large = (by_key[(LANGGRAPH, STEP, size, AGENTSTATE)] for size in sizes[LANGGRAPH])
    ratio = large["median_ms"] / small["median_ms"]
    found.append(
        {
            "target": f"flat: {large['size']:,} steps / {small['size']:,} ≤ {STEP_RATIO}",
            "framework": LANGGRAPH,
            "operation": STEP,
            "size": large["size"],
            "value": round(ratio, 3),
            "limit": STEP_RATIO,
            "met": ratio <= STEP_RATIO,
        }
    )
    return found


@contextlib.contextmanager
def agentstate_server(tmp: Path, *, proxy: bool = False) -> Iterator[tuple[str, int]]:
    """agentstate as it ships, with one worker (``GUNICORN_WORKERS=1``), on the run's database, no
    rate limit; with ``proxy``, behind HAProxy as docs/SCALING.md sets it up. Yields (URL, master pid)."""
    from django.db import connections

    connections.close_all()  # gunicorn's worker opens its own
    env = {k: v for k, v in os.environ.items() if k != "AGENTSTATE_API_RATE"}
    env.update(DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost")
    settings = {"GUNICORN_WORKERS": "1", "GUNICORN_LOG_LEVEL": "warning", "GUNICORN_MAX_REQUESTS": "0"}
    with contextlib.ExitStack() as stack:
        url, master, _ = stack.enter_context(gunicorn(env=env, settings=settings, log=tmp / "gunicorn.log"))
        if proxy:
            url = stack.enter_context(documented_proxy(url, tmp))
        yield url, master


FRAMEWORK_NAMES = {"adk": ADK, "langgraph": LANGGRAPH, "sdk": SDK}  # --framework's choices


def run(*, quick: bool = False, note: str = "", only: str | None = None, proxy: bool = False) -> dict[str, Any]:
    """The suite; ``only`` (a key of ``FRAMEWORK_NAMES``) measures that framework's part alone (a
    profile's before and after, not a kept run: the summary reads complete runs); ``proxy`` sends
    agentstate's calls through HAProxy as docs/SCALING.md sets it up (TLS, keep-alive both sides)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        raise SystemExit("frameworks: the framework's own stores are measured on PostgreSQL (DATABASE_URL)")
    scale = QUICK if quick else FULL
    key = _api_key()
    pg_url = os.environ["DATABASE_URL"].replace("postgres://", "postgresql://", 1)
    loop = asyncio.new_event_loop()
    with (
        tempfile.TemporaryDirectory(prefix="frameworks-bench-") as tmp,
        agentstate_server(Path(tmp), proxy=proxy) as (url, master),
        contextlib.ExitStack() as stack,
    ):
        common = {"url": url, "key": key, "pg_url": pg_url, "tmp": Path(tmp), "scale": scale}
        columns = [_floor(stack, url)]
        fill_s = {}
        caches: dict[str, Callable[[], dict[str, int]]] = {}
        for framework, columns_of in (
            (ADK, lambda: _adk(stack, loop, caches=caches, **common)),
            (LANGGRAPH, lambda: _langgraph(stack, **common)),
            (SDK, lambda: _sdk(stack, loop, caches=caches, **common)),
        ):
            if only is not None and framework != FRAMEWORK_NAMES[only]:
                continue
            started = time.perf_counter()
            columns += columns_of()
            fill_s[framework] = round(time.perf_counter() - started, 1)
            print(f"{framework}: stores filled in {fill_s[framework]} s", flush=True)
        worker = WorkerCPU(master)
        for column in columns:
            if column.role == AGENTSTATE:
                column.server = worker
        started = time.perf_counter()
        for rep in range(scale.reps + 1):  # the first round warms connections and caches
            for column in columns:
                column.rep(loop, keep=rep > 0)
        measure_s = round(time.perf_counter() - started, 1)
        print(f"{len(columns)} columns measured, {scale.reps} reps each, in {measure_s} s", flush=True)
        cache_info = {framework: info() for framework, info in caches.items()}
    loop.close()
    summaries = [column.summary() for column in columns]
    floor_ms = summaries[0]["median_ms"]
    sizes = {"adk_events": scale.adk_events, "langgraph_steps": scale.langgraph_steps, "sdk_items": scale.sdk_items}
    return {
        "quick": quick,
        "note": note,
        "reps": scale.reps,
        "sizes": sizes,
        "adk_listed": scale.adk_listed,
        "proxy": "HAProxy, docs/SCALING.md's recipe" if proxy else None,
        "fill_s": fill_s,
        "measure_s": measure_s,
        "client_caches": cache_info,
        "floor_ms": floor_ms,
        "only": only,
        "columns": summaries,
        "targets": targets(summaries, floor_ms, sizes),
    }


def print_table(result: dict[str, Any]) -> None:
    columns = result["columns"]
    stores = {(c["framework"], c["role"]): c["store"] for c in columns}
    print(f"floor (GET /livez, kept-alive): {result['floor_ms']:.2f} ms (median / p99 ms below)")
    for framework in (ADK, LANGGRAPH, SDK):
        if (framework, AGENTSTATE) not in stores:
            continue
        points: dict[tuple[str, Any], dict[str, Any]] = {}
        for c in columns:
            if c["framework"] == framework:
                points.setdefault((c["operation"], c["size"]), {})[c["role"]] = c
        roles = [role for role in (AGENTSTATE, PEER, BESIDE) if (framework, role) in stores]
        rows = [
            [
                operation,
                "" if size is None else f"{size:,}",
                *[f"{by_role[r]['median_ms']:.2f} / {by_role[r]['p99_ms']:.2f}" for r in roles],
                by_role[AGENTSTATE]["requests"],
                f"{by_role[AGENTSTATE]['caller_cpu_ms']:.2f} / {by_role[AGENTSTATE]['server_cpu_ms']:.2f}",
                f"{by_role[PEER]['caller_cpu_ms']:.2f}",
            ]
            for (operation, size), by_role in points.items()
        ]
        print()
        headers = [framework, "size", *[f"{stores[(framework, r)]} ms" for r in roles]]
        headers += ["requests", "agentstate CPU: caller / server ms", "peer CPU: caller ms"]
        print(report.table(headers, rows))
    print()
    rows = [
        [
            t["framework"],
            t["operation"],
            "" if t["size"] is None else f"{t['size']:,}",
            t["target"],
            t["value"],
            t["limit"],
            "met" if t["met"] else "MISSED",
        ]
        for t in result["targets"]
    ]
    print(report.table(["framework", "operation", "size", "target", "value", "limit", "verdict"], rows))
