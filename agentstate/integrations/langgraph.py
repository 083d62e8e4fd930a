"""``AgentStateSaver``: LangGraph's checkpointer interface (``BaseCheckpointSaver``) on agentstate.

Swap it in for LangGraph's own saver::

    graph = builder.compile(checkpointer=AgentStateSaver(url, api_key, default_user_id="alice"))

Sync and async methods, including the extended ``copy_thread``, ``prune`` and
``delete_for_runs``. A thread belongs to one user: ``config["configurable"]["user_id"]`` of its
first checkpoint, else ``default_user_id``. Checkpoints and writes are stored as LangGraph's
serializer wrote them (type and bytes: the round trip is exact); the server renders staff's JSON
view of them when staff read them, never on the write path. As in LangGraph's own database savers, a
checkpoint's channel values are stored apart from it, by version: a ``put`` sends only the channels
``new_versions`` names (primitive values stay in the checkpoint), a read gets the ones the
checkpoint names (a page of ``list`` each once). Requests and answers are msgpack, which carries the
bytes as they are (JSON would carry them in base64).

Text the database cannot hold (NUL, lone surrogates) is mapped reversibly in every identifier,
metadata key and value: each such character, and the private-use character U+E000 used as the
escape, becomes U+E000 followed by its code point in four hex digits (docs/CLIENT.md).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import math
import random
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, overload

import httpx
import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from agentstate.client.calls import API, Call, T, as_json, as_nothing
from agentstate.client.models import Page
from agentstate.integrations.transport import ClientTransport

__all__ = ["AgentStateSaver", "escape_json", "escape_text", "split_checkpoint", "unescape_text"]

BASE = f"{API}/langgraph"
PAGE_SIZE = 100
_ESCAPE = "\ue000"
_ESCAPE_UTF8 = _ESCAPE.encode()
_NEEDS_ESCAPE = re.compile("[\x00\ue000\ud800-\udfff]")
_ESCAPED = re.compile("\ue000([0-9a-f]{4})")
_STRING_VERSION = re.compile("([0-9]+)(?:\\..*)?", re.DOTALL)  # SqliteSaver's, PostgresSaver's: counter.random


def escape_text(text: str) -> str:
    """``text`` with NUL, lone surrogates and U+E000 as U+E000 + four hex digits (reversible)."""
    if not _NEEDS_ESCAPE.search(text):
        return text
    return _NEEDS_ESCAPE.sub(lambda m: f"{_ESCAPE}{ord(m.group()):04x}", text)


def unescape_text(text: str) -> str:
    if _ESCAPE not in text:
        return text
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def _map_json(value: Any, text) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {text(str(k)): _map_json(v, text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_map_json(v, text) for v in value]
    return value


def escape_json(value: Any) -> Any:
    """A JSON value with ``escape_text`` applied to every string and key."""
    return _map_json(value, escape_text)


def _unescape_json(value: Any) -> Any:
    return _map_json(value, unescape_text)


MSGPACK = "application/msgpack"
MSGPACK_BIG_INT = 1  # the server's msgpack extension type for an integer past 64 bits


def _big_int(code: int, data: bytes) -> int:
    if code != MSGPACK_BIG_INT:
        raise ValueError(f"unknown msgpack extension type {code}")
    return int(data)


def _read(response: httpx.Response) -> Any:
    """A read's answer: msgpack as asked, or JSON (an error, a server that answers JSON only)."""
    if response.headers.get("Content-Type", "").startswith(MSGPACK):
        return ormsgpack.unpackb(response.content, ext_hook=_big_int)
    return as_json(response)


def _read_page(response: httpx.Response) -> tuple[Any, bool]:
    """``_read``'s answer, and whether its text is plain: msgpack with the escape character nowhere
    in its bytes (values' bytes included), so that no string in it needs ``unescape_text``."""
    plain = response.headers.get("Content-Type", "").startswith(MSGPACK) and _ESCAPE_UTF8 not in response.content
    return _read(response), plain


def _as_is(text: str) -> str:
    return text


def _big_int_ext(value: Any) -> Any:
    if isinstance(value, int):
        return ormsgpack.Ext(MSGPACK_BIG_INT, str(value).encode("ascii"))
    raise TypeError(f"{type(value).__name__} is not carried in msgpack")


@dataclasses.dataclass(frozen=True)
class _MsgpackCall(Call[T]):
    """A write whose body travels in msgpack: the serializer's bytes as they are, not in base64
    inside JSON (a third more to send, and to decode in the server); an integer past 64 bits as
    the extension type the reads use."""

    def request_on(self, base_url: str) -> dict[str, Any]:
        request = super().request_on(base_url)
        body = ormsgpack.packb(request.pop("json"), default=_big_int_ext, option=ormsgpack.OPT_PASSTHROUGH_BIG_INT)
        return {**request, "content": body, "headers": {**(self.headers or {}), "Content-Type": MSGPACK}}


def _inline(value: Any) -> bool:
    """A channel value kept in the checkpoint itself, as ``PostgresSaver`` keeps it: a primitive."""
    return value is None or isinstance(value, (str, int, float, bool))


def split_checkpoint(
    serde: SerializerProtocol, checkpoint: Checkpoint, channels: Any = None
) -> tuple[tuple[str, bytes], list[dict[str, Any]]]:
    """The checkpoint serialized without the channel values stored apart, and those of
    ``channels`` (default: all of them) as ``{"channel", "type", "data"}``, as ``PostgresSaver``
    splits them: a primitive stays in the checkpoint, any other value (and a ``DeltaChannel``
    snapshot, whose place in the checkpoint keeps a ``True`` marker) goes apart."""
    values = dict(checkpoint["channel_values"])
    apart = {}
    for channel, value in checkpoint["channel_values"].items():
        if isinstance(value, _DeltaSnapshot):
            apart[channel] = value
            values[channel] = True
        elif not _inline(value):
            apart[channel] = values.pop(channel)
    blobs = []
    for channel in apart if channels is None else [c for c in channels if c in apart]:
        type_, data = serde.dumps_typed(apart[channel])
        blobs.append({"channel": escape_text(channel), "type": type_, "data": data})
    return serde.dumps_typed({**checkpoint, "channel_values": values}), blobs


MAX_BATCH_CALLS = 64  # the server's bound on one batch
# How long a task's writes wait for the checkpoint LangGraph puts right after them (the end of the
# superstep), so that the two go in one request: a step's writes and checkpoints in half the requests.
LINGER_SECONDS = 0.002
SEPARATE = {"channel_values": "separate"}  # a read's answer carries channel values apart (required)


class _Pending:
    """A write (put, put_writes) waiting for its request: its outcome once the server answered, and
    the batch it sends when its turn to lead comes."""

    def __init__(self, call: Call[Any]) -> None:
        self.call = call
        self.batch: list[_Pending] | None = None
        self.outcome: Any = None
        self.error: BaseException | None = None

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.outcome


class _GroupCommit:
    """Group commit of one saver's writes. LangGraph makes them from its background threads or
    tasks while it runs the next node: a write made while another of the saver's requests is in
    flight waits for that request, then goes with every write queued meanwhile as one batch. No
    write waits for more than the request before it, and each returns only once the server
    committed it, with the answer (or the error) it would have had alone. A batch of tasks' writes
    (``put_writes``) only waits up to ``LINGER_SECONDS`` for a checkpoint: LangGraph puts a superstep's
    checkpoint right after its tasks' writes, and they then take one request (another task's writes
    join the wait, they do not end it). The
    sync and async savers share this bookkeeping; each only sends and waits in its own way."""

    def __init__(self) -> None:
        self._busy = False
        self._queue: list[_Pending] = []

    def _join(self, pending: _Pending) -> None:
        """Lead at once when nothing is in flight, else queue (callers hold the lock, if any)."""
        if self._busy:
            self._queue.append(pending)
            if not self._is_writes(pending):
                self._checkpoint_joined()
        else:
            self._busy = True
            pending.batch = [pending]

    @staticmethod
    def _is_writes(pending: _Pending) -> bool:
        """A task's writes (``put_writes``), not a checkpoint (``put``)."""
        return pending.call.url.endswith("/writes/")

    @classmethod
    def lingers(cls, batch: list[_Pending]) -> bool:
        """A batch of tasks' writes only, which a superstep's checkpoint soon follows."""
        return all(cls._is_writes(p) for p in batch)

    def _checkpoint_queued(self) -> bool:
        return not all(self._is_writes(p) for p in self._queue)

    def _gather(self, batch: list[_Pending]) -> None:
        """Take the writes queued meanwhile into ``batch`` (callers hold the lock, if any)."""
        room = MAX_BATCH_CALLS - len(batch)
        batch += self._queue[:room]
        self._queue = self._queue[room:]

    def _next(self) -> _Pending | None:
        """After a batch: the leader of the next one, or None and idle."""
        batch, self._queue = self._queue[:MAX_BATCH_CALLS], self._queue[MAX_BATCH_CALLS:]
        if not batch:
            self._busy = False
            return None
        batch[0].batch = batch
        return batch[0]

    def _checkpoint_joined(self) -> None:
        """A checkpoint queued: wake a leader that lingers."""

    @staticmethod
    def call(batch: list[_Pending]) -> Call[Any]:
        """The request that carries a batch: the call itself when it is alone."""
        if len(batch) == 1:
            return batch[0].call
        calls = [{"path": p.call.url.rstrip("/").rsplit("/", 1)[-1], "body": p.call.json} for p in batch]
        return _MsgpackCall("POST", f"{BASE}/batch/", _batch_responses, json={"calls": calls}, idempotent=True)

    @staticmethod
    def settle(batch: list[_Pending], answer: Any, error: BaseException | None) -> None:
        """Give each write of a batch its outcome: the answer of its call, or the batch's error."""
        if error is not None:
            for pending in batch:
                pending.error = error
        elif len(batch) == 1:
            batch[0].outcome = answer
        else:
            request, results = answer
            for pending, result in zip(batch, results, strict=True):
                try:
                    pending.outcome = _call_result(pending.call, result, request)
                except Exception as exc:  # the typed error the call alone would have raised
                    pending.error = exc


def _batch_responses(response: httpx.Response) -> tuple[httpx.Request, list[dict[str, Any]]]:
    """A batch's answer: each call's status and body, as the call alone would have had them."""
    return response.request, as_json(response)["results"]


def _call_result(call: Call[Any], result: dict[str, Any], request: httpx.Request) -> Any:
    """What ``call`` alone would have returned or raised for a batch's ``result``: a stored put's
    answer read as it is; anything else through the response the call alone would have had."""
    if result["status"] < 400 and call.parse is as_nothing:
        return None
    if result["status"] < 400 and call.parse is as_json:
        return result["body"]
    return call.result(httpx.Response(result["status"], json=result["body"], request=request))


class _SyncGroupCommit(_GroupCommit):
    def __init__(self, send: Callable[[Call[Any]], Any]) -> None:
        super().__init__()
        self._send = send
        self._lock = threading.Lock()
        self._company = threading.Condition(self._lock)
        self._turns: dict[int, threading.Event] = {}

    def _checkpoint_joined(self) -> None:
        self._company.notify()

    def run(self, call: Call[Any]) -> Any:
        pending = _Pending(call)
        turn = threading.Event()
        with self._lock:
            self._join(pending)
            self._turns[id(pending)] = turn
        if pending.batch is None:
            turn.wait()  # set when led by another (outcome given) or when this one leads
        if pending.batch is not None:
            self._lead(pending.batch)
        return pending.result()

    def _lead(self, batch: list[_Pending]) -> None:
        if self.lingers(batch):
            with self._company:
                self._company.wait_for(self._checkpoint_queued, timeout=LINGER_SECONDS)
                self._gather(batch)
        answer, error = None, None
        try:
            answer = self._send(self.call(batch))
        except BaseException as exc:
            error = exc
        self.settle(batch, answer, error)
        with self._lock:
            turns = [self._turns.pop(id(p)) for p in batch]
            leader = self._next()
            if leader is not None:
                turns.append(self._turns[id(leader)])
        for turn in turns[1:]:
            turn.set()


class _AsyncGroupCommit(_GroupCommit):
    def __init__(self, send: Callable[[Call[Any]], Awaitable[Any]]) -> None:
        super().__init__()
        self._send = send
        self._turns: dict[int, asyncio.Event] = {}
        self._company: asyncio.Event | None = None

    def _checkpoint_joined(self) -> None:
        if self._company is not None:
            self._company.set()

    async def run(self, call: Call[Any]) -> Any:
        pending = _Pending(call)
        turn = self._turns[id(pending)] = asyncio.Event()
        self._join(pending)
        if pending.batch is None:
            try:
                await turn.wait()
            except asyncio.CancelledError:
                self._leave(pending)
                raise
        if pending.batch is not None:
            await self._lead(pending.batch)
        return pending.result()

    def _leave(self, pending: _Pending) -> None:
        """A cancelled write: never sent if still queued; a batch it was to lead is sent anyway."""
        if pending in self._queue:
            self._queue.remove(pending)
            del self._turns[id(pending)]
        elif pending.batch is not None:
            asyncio.ensure_future(self._lead(pending.batch))  # noqa: RUF006 (the batch settles every write it holds)

    async def _lead(self, batch: list[_Pending]) -> None:
        if self.lingers(batch):
            if not self._checkpoint_queued():
                self._company = asyncio.Event()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._company.wait(), LINGER_SECONDS)
                self._company = None
            self._gather(batch)
        answer, error = None, None
        try:
            answer = await self._send(self.call(batch))
        except BaseException as exc:
            error = exc
        self.settle(batch, answer, error)
        turns = [self._turns.pop(id(p)) for p in batch]
        leader = self._next()
        if leader is not None:
            turns.append(self._turns[id(leader)])
        for turn in turns[1:]:
            turn.set()


class AgentStateSaver(ClientTransport, BaseCheckpointSaver[str]):
    """LangGraph checkpointer on an agentstate server; ``default_user_id`` owns threads whose
    first checkpoint names no ``configurable["user_id"]``."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        default_user_id: str,
        serde: SerializerProtocol | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self._transport_setup(
            base_url, api_key, timeout=timeout, retries=retries, transport=transport, async_transport=async_transport
        )
        self.default_user_id = default_user_id
        self._writes = _SyncGroupCommit(self._run)
        self._async_writes: tuple[asyncio.AbstractEventLoop, _AsyncGroupCommit] | None = None

    @overload
    def get_next_version(self, current: str | None, channel: None = None) -> str: ...
    @overload
    def get_next_version(self, current: float, channel: None = None) -> float: ...
    def get_next_version(self, current: float | str | None, channel: None = None) -> float | str:
        """The channel version after ``current``. Values are stored by version, so a fork's new
        version must not be one its thread's other line used already: as LangGraph's own savers, a
        version has a random part. A thread begins with their strings (a 32-digit counter, ``.``, a
        random part, which sort as they count), and one imported from ``SqliteSaver`` or
        ``PostgresSaver`` goes on with them. A thread begun with integers (earlier versions of this
        saver) goes on with numbers, since LangGraph compares a thread's versions with each other:
        the next integer plus a random fraction of six digits (which PostgreSQL's and SQLite's JSON
        write as Python does, so the stored values are found by them)."""
        if current is None or isinstance(current, str):
            counter = _STRING_VERSION.fullmatch(current or "0")
            if counter is None:
                raise ValueError(f"Channel version {current!r} is neither a number nor LangGraph's 'counter.random'.")
            return f"{int(counter.group(1)) + 1:032}.{random.random():016}"  # noqa: S311 (a tie-break, as LangGraph's)
        return float(f"{math.floor(current) + 1}.{random.randint(1, 999_999):06}")  # noqa: S311 (idem)

    # --- transports -------------------------------------------------------------------------

    def _async_group_commit(self) -> _AsyncGroupCommit:
        """The group commit of the running loop (its waits belong to one loop, as httpx's pool)."""
        loop = asyncio.get_running_loop()
        if self._async_writes is None or self._async_writes[0] is not loop:
            self._async_writes = (loop, _AsyncGroupCommit(self._arun))
        return self._async_writes[1]

    # --- requests, built once for both transports ---------------------------------------------

    def _typed(self, value: Any) -> dict[str, Any]:
        type_, data = self.serde.dumps_typed(value)
        return {"type": type_, "data": data}

    def _users(self, config: RunnableConfig) -> dict[str, str | None]:
        user_id = config["configurable"].get("user_id")
        return {"user_id": None if user_id is None else str(user_id), "default_user_id": self.default_user_id}

    def _put_call(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> tuple[Call[None], RunnableConfig]:
        configurable = config["configurable"]
        thread_id, checkpoint_ns = configurable["thread_id"], configurable.get("checkpoint_ns", "")
        parent_id = configurable.get("checkpoint_id")
        (type_, data), channel_values = split_checkpoint(self.serde, checkpoint, new_versions)
        body = {
            "thread_id": escape_text(str(thread_id)),
            **self._users(config),
            "checkpoint_ns": escape_text(checkpoint_ns),
            "checkpoint_id": escape_text(checkpoint["id"]),
            "parent_checkpoint_id": None if parent_id is None else escape_text(parent_id),
            "checkpoint": {"type": type_, "data": data},
            "metadata": escape_json(get_serializable_checkpoint_metadata(config, metadata)),
            "channel_versions": escape_json(checkpoint["channel_versions"]),
            "channel_values": channel_values,
        }
        stored: RunnableConfig = {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint["id"]}
        }
        return _MsgpackCall("POST", f"{BASE}/checkpoints/", as_nothing, json=body, idempotent=True), stored

    def _writes_call(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> Call[Any]:
        configurable = config["configurable"]
        body = {
            "thread_id": escape_text(str(configurable["thread_id"])),
            **self._users(config),
            "checkpoint_ns": escape_text(configurable.get("checkpoint_ns", "")),
            "checkpoint_id": escape_text(configurable["checkpoint_id"]),
            "task_id": escape_text(task_id),
            "task_path": escape_text(task_path),
            # Special channels (errors, interrupts, ...) overwrite on retry, as in LangGraph's savers.
            "replace": all(channel in WRITES_IDX_MAP for channel, _ in writes),
            "writes": [
                {"idx": WRITES_IDX_MAP.get(channel, idx), "channel": escape_text(channel), "value": self._typed(value)}
                for idx, (channel, value) in enumerate(writes)
            ],
        }
        return _MsgpackCall("POST", f"{BASE}/writes/", as_json, json=body, idempotent=True)

    def _get_call(self, config: RunnableConfig) -> Call[CheckpointTuple | None]:
        configurable = config["configurable"]
        params = {
            **SEPARATE,
            "thread_id": escape_text(str(configurable["thread_id"])),
            "checkpoint_ns": escape_text(configurable.get("checkpoint_ns", "")),
        }
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            params["checkpoint_id"] = escape_text(checkpoint_id)

        def parse(response):
            if response.status_code == 404:
                return None
            data, plain = _read_page(response)
            return self._tuple(data, plain=plain)

        return Call(
            "GET", f"{BASE}/checkpoint/", parse, params=params, headers={"Accept": MSGPACK}, answers=frozenset({404})
        )

    def _list_call(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Call[tuple[dict[str, Any], bool]]:
        params: dict[str, str] = {**SEPARATE, "page_size": str(min(limit, PAGE_SIZE) if limit else PAGE_SIZE)}
        configurable = (config or {}).get("configurable") or {}
        if configurable.get("thread_id") is not None:
            params["thread_id"] = escape_text(str(configurable["thread_id"]))
        if configurable.get("checkpoint_ns") is not None:
            params["checkpoint_ns"] = escape_text(configurable["checkpoint_ns"])
        checkpoint_id = get_checkpoint_id(config) if config else None
        if checkpoint_id:  # that checkpoint only, as LangGraph's savers list a config naming one
            params["checkpoint_id"] = escape_text(checkpoint_id)
        before_id = get_checkpoint_id(before) if before is not None else None
        if before_id:
            params["before"] = escape_text(before_id)
        if filter:
            params["filter"] = json.dumps(escape_json(filter), allow_nan=False)
        return Call("GET", f"{BASE}/checkpoints/", _read_page, params=params, headers={"Accept": MSGPACK})

    def _tuple(
        self, item: dict[str, Any], page: dict[tuple[str, ...], Any] | None = None, *, plain: bool = False
    ) -> CheckpointTuple:
        """A checkpoint as the server answered it. ``page``: the channel values its page gave so far,
        by thread, namespace, channel and version (the server gives each once a page, null where it
        repeats); each checkpoint decodes its own copy, as LangGraph's savers give them. ``plain``:
        no string of the answer is escaped (``_read_page``), none is looked at again."""
        text = _as_is if plain else unescape_text
        thread_id = text(item["thread_id"])
        checkpoint_ns = text(item["checkpoint_ns"])
        page = {} if page is None else page

        def config(checkpoint_id: str) -> RunnableConfig:
            return {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": checkpoint_ns,
                    "checkpoint_id": text(checkpoint_id),
                }
            }

        def value(typed: dict[str, Any]) -> Any:
            data = typed["data"]  # bytes in msgpack, base64 in JSON
            return self.serde.loads_typed((typed["type"], data if isinstance(data, bytes) else base64.b64decode(data)))

        def channel_value(c: dict[str, Any]) -> Any:
            key = (item["thread_id"], item["checkpoint_ns"], c["channel"], c["version"])
            if c["value"] is not None:
                page[key] = c["value"]
            return value(page[key])

        checkpoint = value(item["checkpoint"])
        if item["channel_values"]:
            checkpoint["channel_values"] = {
                **checkpoint.get("channel_values", {}),
                **{text(c["channel"]): channel_value(c) for c in item["channel_values"]},
            }
        parent = item["parent_checkpoint_id"]
        return CheckpointTuple(
            config=config(item["checkpoint_id"]),
            checkpoint=checkpoint,
            metadata=item["metadata"] if plain else _unescape_json(item["metadata"]),
            parent_config=config(parent) if parent else None,
            pending_writes=[
                (text(w["task_id"]), text(w["channel"]), value(w["value"])) for w in item["pending_writes"]
            ],
        )

    @staticmethod
    def _count_call(path: str, body: dict[str, Any]) -> Call[Any]:
        return Call("POST", f"{BASE}/{path}/", as_json, json=body, idempotent=True)

    def _delete_thread_call(self, thread_id: str) -> Call[None]:
        return Call(
            "POST",
            f"{BASE}/threads/delete/",
            as_nothing,
            json={"thread_id": escape_text(str(thread_id))},
            idempotent=True,
        )

    def _copy_call(self, source_thread_id: str, target_thread_id: str) -> Call[Any]:
        return self._count_call(
            "threads/copy",
            {
                "source_thread_id": escape_text(str(source_thread_id)),
                "target_thread_id": escape_text(str(target_thread_id)),
            },
        )

    def _prune_call(self, thread_ids: Sequence[str], strategy: str) -> Call[Any]:
        return self._count_call(
            "threads/prune", {"thread_ids": [escape_text(str(t)) for t in thread_ids], "strategy": strategy}
        )

    def _runs_call(self, run_ids: Sequence[str]) -> Call[Any]:
        return self._count_call("runs/delete", {"run_ids": [escape_text(str(r)) for r in run_ids]})

    @staticmethod
    def _page(data: dict[str, Any], call: Call[Any], remaining: int | None) -> tuple[list[dict], Call[Any] | None]:
        """The page's items within ``remaining``, and the call of the next page (None at the end)."""
        items = data["results"] if remaining is None else data["results"][:remaining]
        left = None if remaining is None else remaining - len(items)
        cursor = Page(results=[], next=data.get("next")).next_cursor
        if cursor is None or left == 0:
            return items, None
        params = {**(call.params or {}), "cursor": cursor}
        if left is not None:
            params["page_size"] = str(min(left, PAGE_SIZE))
        return items, Call(call.method, call.url, call.parse, params=params, headers=call.headers)

    # --- BaseCheckpointSaver, sync ------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._run(self._get_call(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        call: Call[Any] | None = self._list_call(config, filter, before, limit)
        remaining = limit
        while call is not None:
            data, plain = self._run(call)
            items, next_call = self._page(data, call, remaining)
            page: dict[tuple[str, ...], Any] = {}
            for item in items:
                yield self._tuple(item, page, plain=plain)
            remaining = None if remaining is None else remaining - len(items)
            call = next_call

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        call, stored = self._put_call(config, checkpoint, metadata, new_versions)
        self._writes.run(call)
        return stored

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        if writes:
            self._writes.run(self._writes_call(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._run(self._delete_thread_call(thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._run(self._copy_call(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._run(self._prune_call(thread_ids, strategy))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._run(self._runs_call(run_ids))

    # --- BaseCheckpointSaver, async -----------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._arun(self._get_call(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        call: Call[Any] | None = self._list_call(config, filter, before, limit)
        remaining = limit
        while call is not None:
            data, plain = await self._arun(call)
            items, next_call = self._page(data, call, remaining)
            page: dict[tuple[str, ...], Any] = {}
            for item in items:
                yield self._tuple(item, page, plain=plain)
            remaining = None if remaining is None else remaining - len(items)
            call = next_call

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        call, stored = self._put_call(config, checkpoint, metadata, new_versions)
        await self._async_group_commit().run(call)
        return stored

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        if writes:
            await self._async_group_commit().run(self._writes_call(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._arun(self._delete_thread_call(thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._arun(self._copy_call(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._arun(self._prune_call(thread_ids, strategy))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._arun(self._runs_call(run_ids))
