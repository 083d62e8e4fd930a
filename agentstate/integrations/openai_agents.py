"""OpenAI Agents SDK sessions on agentstate: ``AgentStateSession`` implements the SDK's ``Session``
protocol (and the branches of its ``AdvancedSQLiteSession``) over the REST API.

    session = AgentStateSession("chat-1", base_url=URL, api_key=KEY, user_id="alice")
    await Runner.run(agent, "Hello", session=session)

Every item is stored whole (its JSON text is the message's ``content``; its role, type and name are
kept in columns for staff, search and erasure) and comes back exactly as ``json.loads`` of what
``SQLiteSession`` stores. Each item sent gets a client id, so a retried ``add_items`` stores
nothing twice; a pop carries an idempotency key, so a retried pop pops once. Concurrency is the
server's: a pop is one request and one transaction.

Branches: the SDK keeps one session id with a current-branch pointer; agentstate forks. Branch
``main`` is the agentstate session named by the SDK's session id, every other branch is a fork of
the branch it came from (same user and workspace, ``metadata.openai_agents.branch`` its name).
docs/CLIENT.md lists the mapping and its deviations. Imports no Django.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import httpx
from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit
from pydantic import BaseModel

from agentstate.client import calls
from agentstate.client.calls import Call, query, session_url
from agentstate.client.clients import AsyncAgentStateClient, AsyncEndpoints
from agentstate.client.errors import Conflict, NotFound
from agentstate.client.models import MessageRecord, Page, SessionRecord

MAIN = "main"
FRAMEWORK_KEY = "openai_agents"  # the metadata key naming the SDK session and the branch
IDENTIFIER_MAX = 128
MAX_ITEMS_PER_APPEND = 500
MAX_BYTES_PER_APPEND = 4 * 1024 * 1024  # under the server's default 5 MiB body limit
RECENT_MAX = 500
PAGE_MAX = 2000  # messages per page of a whole read (the server's largest: one request up to there)
HELD_MAX_ITEMS = 20_000  # items a session object keeps from its last whole read (their JSON text)


def _valid_identifier(value: str) -> bool:
    """The server's identifier rule: 1-128 characters, no control characters, no '/', UTF-8."""
    if not 0 < len(value) <= IDENTIFIER_MAX or "/" in value:
        return False
    if any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in value):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _hashed(kind: str, *parts: str) -> str:
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=True).encode()).hexdigest()
    return f"oa-{kind}-{digest}"


def main_session_id(session_id: str) -> str:
    """The agentstate session of branch ``main``: the SDK's id itself when the server takes it as an
    identifier, else a stable hash of it (the SDK accepts any string)."""
    return session_id if _valid_identifier(session_id) else _hashed("session", session_id)


def branch_session_id(session_id: str, branch_id: str) -> str:
    """The agentstate session of a branch other than ``main``: a stable hash of both names, so no
    branch can collide with a session id a caller picked."""
    return main_session_id(session_id) if branch_id == MAIN else _hashed("branch", session_id, branch_id)


def _label(value: Any, max_length: int) -> str:
    """A column the server indexes (role, type, name): kept when it is a valid label, else blank
    (the item itself, in ``content``, always keeps it)."""
    return value if isinstance(value, str) and len(value) <= max_length and _valid_identifier(value) else ""


def _encoded(item: Any) -> str:
    """The item's JSON text; NUL and lone surrogates, which the server refuses raw, are escaped."""
    text = json.dumps(item, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(item, ensure_ascii=True)
    return text


def _message(item: Any) -> dict[str, Any]:
    fields = item if isinstance(item, dict) else {}
    return {
        "client_id": f"oa-{uuid.uuid4()}",
        "role": _label(fields.get("role"), 32),
        "type": _label(fields.get("type"), 32) or "message",
        "name": _label(fields.get("name"), IDENTIFIER_MAX),
        "content": _encoded(item),
    }


def _deleted(record: SessionRecord) -> bool:
    """A branch ``delete_branch`` removed (its session cleared and ended). A session retention ended
    for idleness is not: the branch's next write reopens it."""
    return record.ended_at is not None and not record.ended_by_retention


def _item(record: MessageRecord) -> Any:
    return json.loads(cast(str, record.content))  # this adapter stores each item as JSON text


class _Content(BaseModel):
    """Of a stored message, what its item is read from (each item is stored as JSON text): a page
    read into this skips validating the fields an item does not need."""

    seq: int
    client_id: str | None = None
    content: str


class _Page(Page[_Content]):
    generation: str | None = None  # the session's history generation (X-History-Generation)


def _PAGE(response: httpx.Response) -> _Page:
    page = calls.parsed(_Page, response)
    page.generation = response.headers.get("X-History-Generation")
    return page


@dataclass(frozen=True)
class _HeldItems:
    """The items of a branch as this object last read them whole: the history generation then, each
    item's (seq, client id) and JSON text."""

    generation: str
    keys: list[tuple[int, str | None]]
    contents: list[str]

    def popped(self, seq: int, client_id: str | None) -> _HeldItems | None:
        """After this object popped (seq, client_id): what it then holds, if that was its last item
        (the pop advanced the generation by one; any other edit since will show as another)."""
        if len(self.keys) < 2 or self.keys[-1] != (seq, client_id) or self.keys[-2][1] is None:
            return None
        return _HeldItems(str(int(self.generation) + 1), self.keys[:-1], self.contents[:-1])


def _items(contents: Iterable[str]) -> list[Any]:
    """The items of stored messages, their JSON texts decoded in one pass."""
    return json.loads("[" + ",".join(contents) + "]")


def _batches(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Appends the server takes: at most 500 messages and about 4 MiB each."""
    batches: list[list[dict[str, Any]]] = []
    size = MAX_BYTES_PER_APPEND
    for message in messages:
        length = len(message["content"].encode("utf-8", "surrogatepass")) + 200
        if not batches or len(batches[-1]) >= MAX_ITEMS_PER_APPEND or size + length > MAX_BYTES_PER_APPEND:
            batches.append([])
            size = 0
        batches[-1].append(message)
        size += length
    return batches


class _Borrowed:
    """``async with`` a shared client without closing it at the end."""

    def __init__(self, client: AsyncAgentStateClient) -> None:
        self.client = client

    async def __aenter__(self) -> AsyncEndpoints:
        return self.client

    async def __aexit__(self, *exc_info: Any) -> None:
        return None


class AgentStateSession(SessionABC):
    """The Agents SDK's ``Session`` on agentstate, with ``AdvancedSQLiteSession``'s branches.

    ``session_id`` is the SDK's; ``user_id`` owns the conversation (erasure and export find it by
    that). The session is created on the first ``add_items``; reading one that does not exist
    yet gives no items, as the SDK's stores do.
    """

    def __init__(
        self,
        session_id: str,
        *,
        base_url: str,
        api_key: str,
        user_id: str,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = (
            SessionSettings() if session_settings is None else coerce_session_settings(session_settings)
        )
        self.user_id = user_id
        self._base_url, self._api_key = base_url, api_key
        self._client_options: dict[str, Any] = {"timeout": timeout, "retries": retries, "transport": transport}
        self._branch = MAIN
        self._held: dict[str, _HeldItems] = {}
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncAgentStateClient] = (
            weakref.WeakKeyDictionary()
        )

    # --- the Session protocol --------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The latest ``limit`` items (all when None or negative, as SQLiteSession), oldest first."""
        limit = resolve_session_limit(limit, self.session_settings)
        if limit == 0:
            return []
        url = session_url(self.user_id, self._current(), "messages")
        async with self._api() as api:
            try:
                if limit is not None and 0 < limit <= RECENT_MAX:
                    page = await api._call(Call("GET", url, _PAGE, params=query(recent=limit)))
                    return _items(c.content for c in page.results)
                contents = await self._all_contents(api, url)
            except NotFound:
                self._held.pop(self._current(), None)
                return []
        return _items(contents[-limit:] if limit and limit > 0 else contents)

    async def _all_contents(self, api: AsyncEndpoints, url: str) -> list[str]:
        """Every stored item's JSON text. What this object read before is asked again only from its
        last item on: if that item is still there with its client id and the history generation
        is the same (no pop, rewind, clear or retention since), the answer adds what came after
        it; otherwise every item is read again."""
        held = self._held.get(self._current())
        if held is not None:
            last_seq, last_client_id = held.keys[-1]
            page = await api._call(Call("GET", url, _PAGE, params=query(after_seq=last_seq - 1, page_size=PAGE_MAX)))
            first = page.results[0] if page.results else None
            if (
                page.generation == held.generation
                and not page.next
                and first is not None
                and (first.seq, first.client_id) == (last_seq, last_client_id)
            ):
                added = page.results[1:]
                return self._hold(
                    page.generation,
                    [*held.keys, *((m.seq, m.client_id) for m in added)],
                    [*held.contents, *(m.content for m in added)],
                )
        call: Call[_Page] | None = Call("GET", url, _PAGE, params=query(page_size=PAGE_MAX))
        keys: list[tuple[int, str | None]] = []
        contents: list[str] = []
        generation = None
        while call is not None:
            page = await api._call(call)
            if generation not in (None, page.generation):  # edited while read: read again, keep nothing
                self._held.pop(self._current(), None)
                return [
                    m.content async for m in api._iterate(Call("GET", url, _PAGE, params=query(page_size=PAGE_MAX)))
                ]
            generation = page.generation
            keys.extend((m.seq, m.client_id) for m in page.results)
            contents.extend(m.content for m in page.results)
            call = call.with_cursor(page.next_cursor) if page.next_cursor else None
        return self._hold(generation, keys, contents)

    def _hold(self, generation: str | None, keys: list[tuple[int, str | None]], contents: list[str]) -> list[str]:
        """Keep ``contents`` for the next whole read (at most ``HELD_MAX_ITEMS``, the last with a
        client id to check it by); returns them."""
        sid = self._current()
        if generation is None or not keys or keys[-1][1] is None or len(contents) > HELD_MAX_ITEMS:
            self._held.pop(sid, None)
        else:
            self._held = {sid: _HeldItems(generation, keys, contents)}  # one branch
        return contents

    async def add_items(self, items: list[Any]) -> None:
        """Store the items in order; each batch is atomic and safe to retry (client ids)."""
        if not items:
            return
        messages = [_message(item) for item in items]
        async with self._api() as api:
            for batch in _batches(messages):
                try:
                    await api.message_append(self.user_id, self._current(), batch)
                except NotFound:
                    await self._create(api)
                    await api.message_append(self.user_id, self._current(), batch)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item of the current branch; None when it has none."""
        async with self._api() as api:
            try:
                popped = await api.message_pop(self.user_id, self._current())
            except NotFound:
                return None
        if popped is None:
            return None
        held = self._held.pop(self._current(), None)
        after = held.popped(popped.seq, popped.client_id) if held is not None else None
        if after is not None:
            self._held = {self._current(): after}
        return _item(popped)

    async def clear_session(self) -> None:
        """Remove every item of every branch (as AdvancedSQLiteSession does) and go back to ``main``;
        branch names stay taken."""
        async with self._api() as api:
            for record in await self._family(api):
                if not _deleted(record) and record.message_count:
                    await api.message_clear(self.user_id, record.session_id)
        self._branch = MAIN

    # --- branches (AdvancedSQLiteSession) --------------------------------------------------------

    async def create_branch_from_turn(self, turn_number: int, branch_name: str | None = None) -> str:
        """Fork the current branch just before its ``turn_number``-th user message into a new branch,
        and switch to it. ValueError when that turn has no user message or the name was used."""
        if branch_name is not None and not branch_name.strip():
            raise ValueError("Branch name cannot be empty")
        async with self._api() as api:
            turn_seq = await self._user_turn_seq(api, turn_number)
            if turn_seq is None:
                raise ValueError(f"Turn {turn_number} does not contain a user message in branch '{self._branch}'")
            name = branch_name
            suffix = 1
            while True:
                candidate = name or f"branch_from_turn_{turn_number}_{int(time.time())}" + (
                    f"_{suffix}" if suffix > 1 else ""
                )
                try:
                    await api.session_fork(
                        self.user_id,
                        self._current(),
                        branch_session_id(self.session_id, candidate),
                        up_to_seq=turn_seq - 1,
                        metadata=self._metadata(candidate),
                    )
                    break
                except Conflict:
                    if name is not None:
                        raise ValueError(f"Branch ID '{name}' has already been used. Choose a new branch ID.") from None
                    suffix += 1
        self._branch = candidate
        return candidate

    async def switch_to_branch(self, branch_id: str) -> None:
        """Make ``branch_id`` current; ValueError when it holds no items (as in the SDK)."""
        async with self._api() as api:
            if not await self._branch_exists(api, branch_id):
                raise ValueError(f"Branch '{branch_id}' does not exist")
        self._branch = branch_id

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Remove a branch's items; its name stays taken (the agentstate session is cleared and
        ended, not deleted). ``main`` cannot go; the current branch only with ``force``."""
        if not branch_id or not branch_id.strip():
            raise ValueError("Branch ID cannot be empty")
        if branch_id == MAIN:
            raise ValueError("Cannot delete the 'main' branch")
        if branch_id == self._branch:
            if not force:
                raise ValueError(f"Cannot delete current branch '{branch_id}'. Use force=True or switch branches first")
            async with self._api() as api:
                if not await self._branch_exists(api, branch_id):
                    raise ValueError(f"Branch '{branch_id}' does not exist")
            await self.switch_to_branch(MAIN)
        async with self._api() as api:
            if not await self._branch_exists(api, branch_id):
                raise ValueError(f"Branch '{branch_id}' does not exist")
            sid = branch_session_id(self.session_id, branch_id)
            await api.message_clear(self.user_id, sid)
            await api.session_end(self.user_id, sid)

    async def list_branches(self) -> list[dict[str, Any]]:
        """Branches that hold items, oldest first: ``branch_id``, ``message_count``, ``user_turns``,
        ``is_current``, ``created_at`` (ISO 8601)."""
        async with self._api() as api:
            branches = []
            for record in await self._family(api):
                if _deleted(record) or not record.message_count:
                    continue
                name = (record.metadata or {})[FRAMEWORK_KEY].get("branch", MAIN)  # _family kept marked ones
                user_turns = 0
                async for _ in api.message_iter(self.user_id, record.session_id, role="user", page_size=RECENT_MAX):
                    user_turns += 1
                branches.append(
                    {
                        "branch_id": name,
                        "message_count": record.message_count,
                        "user_turns": user_turns,
                        "is_current": name == self._branch,
                        "created_at": record.created_at.isoformat() if record.created_at else None,
                    }
                )
        return branches

    @property
    def current_branch_id(self) -> str:
        return self._branch

    # --- plumbing --------------------------------------------------------------------------------

    def _api(self) -> _Borrowed:
        """The client of the running event loop: the SDK may call from several loops (``run_sync``,
        ``asyncio.run`` per turn), and an HTTP connection pool belongs to the loop that opened it."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = AsyncAgentStateClient(self._base_url, self._api_key, **self._client_options)
        return _Borrowed(client)

    async def aclose(self) -> None:
        """Close the connections of the running event loop (the stored history stays)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    def _current(self) -> str:
        return branch_session_id(self.session_id, self._branch)

    def _metadata(self, branch: str) -> dict[str, Any]:
        return {FRAMEWORK_KEY: {"session_id": self.session_id, "branch": branch}}

    async def _create(self, api: AsyncEndpoints) -> None:
        """Create branch ``main`` (a branch other than main exists from its creation); a concurrent
        create is fine."""
        try:
            await api.session_create(
                self.user_id,
                self._current(),
                workspace_id=main_session_id(self.session_id),
                metadata=self._metadata(self._branch),
            )
        except Conflict:
            pass

    async def _family(self, api: AsyncEndpoints) -> list[SessionRecord]:
        """The agentstate sessions of this SDK session's branches (they share its workspace id)."""
        family = []
        async for record in api.session_iter(user_id=self.user_id, workspace_id=main_session_id(self.session_id)):
            marker = (record.metadata or {}).get(FRAMEWORK_KEY)
            if isinstance(marker, dict) and marker.get("session_id") == self.session_id:
                family.append(record)
        return family

    async def _branch_exists(self, api: AsyncEndpoints, branch_id: str) -> bool:
        try:
            record = await api.session_get(self.user_id, branch_session_id(self.session_id, branch_id))
        except NotFound:
            return False
        return not _deleted(record) and bool(record.message_count)

    async def _user_turn_seq(self, api: AsyncEndpoints, turn_number: int) -> int | None:
        """The seq of the current branch's ``turn_number``-th user message (turns count from 1)."""
        if turn_number < 1:
            return None
        seen = 0
        try:
            async for record in api.message_iter(self.user_id, self._current(), role="user", page_size=RECENT_MAX):
                seen += 1
                if seen == turn_number:
                    return record.seq
        except NotFound:
            return None
        return None
