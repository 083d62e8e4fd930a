"""OpenAI Agents SDK sessions on agentstate: ``AgentStateSession`` implements the SDK's ``Session``
protocol (and what its ``AdvancedSQLiteSession`` adds: branches, usage per turn, turns and search
by content) over the REST API.

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

import functools
import hashlib
import json
import logging
import re
import time
import uuid
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
from agentstate.client.loops import LoopClients
from agentstate.client.models import MessageRecord, Page, RunUsage, SessionRecord

MAIN = "main"
FRAMEWORK_KEY = "openai_agents"  # the metadata key naming the SDK session and the branch
IDENTIFIER_MAX = 128
MAX_ITEMS_PER_APPEND = 500
MAX_BYTES_PER_APPEND = 4 * 1024 * 1024  # under the server's default 5 MiB body limit
RECENT_MAX = 500
PAGE_MAX = 2000  # messages per page of a whole read (the server's largest: one request up to there)
HELD_MAX_ITEMS = 20_000  # items a session object keeps from its last whole read (their JSON text)
HELD_MAX_CHARS = 32 * 2**20  # and at most this many characters of it (Python keeps each in 1-4 bytes)
USAGE_COUNTS = ("requests", "input_tokens", "output_tokens", "total_tokens")
# Tool calls as AdvancedSQLiteSession counts them in get_tool_usage, and those it names by their type.
TOOL_CALLS = (
    "tool_call",
    "function_call",
    "computer_call",
    "file_search_call",
    "web_search_call",
    "code_interpreter_call",
    "tool_search_call",
    "custom_tool_call",
    "mcp_call",
    "mcp_approval_request",
    "shell_call",
    "apply_patch_call",
)
NAMED_BY_TYPE = (
    "computer_call",
    "file_search_call",
    "web_search_call",
    "code_interpreter_call",
    "shell_call",
    "apply_patch_call",
)
logger = logging.getLogger(__name__)


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


@functools.lru_cache(maxsize=1024)  # asked on every call; the identifier check reads each character
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


def item_message(item: Any) -> dict[str, Any]:
    """An SDK item as the message agentstate stores (the session's add and the import share it)."""
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


def _is_user(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") == "user"


def _kind(item: Any) -> str:
    """An item's kind as AdvancedSQLiteSession classifies it: user, assistant, its type, or other."""
    if isinstance(item, dict):
        if item.get("role") in ("user", "assistant"):
            return item["role"]
        if item.get("type"):
            return str(item["type"])
    return "other"


def _tool_name(item: Any) -> str | None:
    """The tool an item calls or answers, named as AdvancedSQLiteSession names it (an MCP tool
    ``server.tool``, a hosted tool by its type, a namespaced function ``namespace.name``)."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind in ("mcp_call", "mcp_approval_request") and "server_label" in item:
        label, name = item.get("server_label"), item.get("name")
        if name and label:
            return f"{label}.{name}"
        return str(label) if label else str(name) if name else None
    if kind in ("tool_search_call", "tool_search_output"):
        return "tool_search"
    if kind in NAMED_BY_TYPE:
        return kind
    if "name" not in item or item["name"] is None:
        return None
    name, namespace = str(item["name"]), item.get("namespace")
    namespace = None if namespace is None else str(namespace)
    return f"{namespace}.{name}" if namespace and name and namespace != name else name


def _preview(content: Any, max_length: int | None = None) -> str:
    """A user message's content as text (parts as JSON), cut at ``max_length`` characters."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return text[:max_length] + "..." if max_length is not None and len(text) > max_length else text


def _contains(content: Any, search_term: str) -> bool:
    """AdvancedSQLiteSession's match: the term in the message's text (or in one of its parts'
    texts), as a substring, ignoring the case of ASCII letters only (SQLite's LIKE)."""
    pattern = re.compile(re.escape(search_term), re.IGNORECASE | re.ASCII)
    texts = [content] if isinstance(content, str) else [part.get("text", "") for part in content]
    return any(pattern.search(text) for text in texts)


def _turn(record: MessageRecord, turn: int, max_length: int | None) -> dict[str, Any] | None:
    """A user turn as AdvancedSQLiteSession describes it; None for one it would skip."""
    try:
        content = _item(record).get("content", "")
    except (AttributeError, ValueError):
        return None
    return {
        "turn": turn,
        "content": _preview(content, max_length),
        "full_content": content,
        "timestamp": record.created_at.isoformat() if record.created_at else None,
        "can_branch": True,
    }


def _usage_details(details: Any) -> dict[str, Any] | None:
    """The SDK's token details as AdvancedSQLiteSession stores them: their fields, or nothing when
    they are not JSON."""
    if not details:
        return None
    try:
        return json.loads(json.dumps(details.__dict__))
    except (TypeError, ValueError):
        return None


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
    size: int  # characters of JSON text held

    def popped(self, seq: int, client_id: str | None) -> _HeldItems | None:
        """After this object popped (seq, client_id): what it then holds, if that was its last item
        or one added after it (the pop advanced the generation by one; any other edit since will
        show as another)."""
        after = str(int(self.generation) + 1)
        if seq > self.keys[-1][0]:  # an item added after the last held one: what is held stays
            return _HeldItems(after, self.keys, self.contents, self.size)
        if len(self.keys) < 2 or self.keys[-1] != (seq, client_id) or self.keys[-2][1] is None:
            return None
        return _HeldItems(after, self.keys[:-1], self.contents[:-1], self.size - len(self.contents[-1]))


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
    """The Agents SDK's ``Session`` on agentstate, with ``AdvancedSQLiteSession``'s methods, and
    ``rewind``, ``fork`` and ``close`` of its own.

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
        self._held_hits = self._held_misses = 0
        self._clients = LoopClients(
            lambda: AsyncAgentStateClient(self._base_url, self._api_key, **self._client_options)
        )
        self._closed = False

    def cache_info(self) -> dict[str, int]:
        """What this object keeps of its last whole read: ``hits`` (whole reads that asked only for
        what came after it), ``misses`` (whole reads of every item), the ``items`` held and the
        ``chars`` of their JSON text, ``max_chars``."""
        held = next(iter(self._held.values()), None)
        return {
            "hits": self._held_hits,
            "misses": self._held_misses,
            "items": len(held.keys) if held else 0,
            "chars": held.size if held else 0,
            "max_chars": HELD_MAX_CHARS,
        }

    # --- the Session protocol --------------------------------------------------------------------

    async def get_items(self, limit: int | None = None, branch_id: str | None = None) -> list[Any]:
        """The latest ``limit`` items (all when None or negative, as SQLiteSession), oldest first,
        of the current branch or of ``branch_id`` (none for a branch that does not exist)."""
        limit = resolve_session_limit(limit, self.session_settings)
        if limit == 0:
            return []
        sid = self._branch_sid(branch_id)
        url = session_url(self.user_id, sid, "messages")
        async with self._api() as api:
            try:
                if limit is not None and 0 < limit <= RECENT_MAX:
                    page = await api._call(Call("GET", url, _PAGE, params=query(recent=limit)))
                    return _items(c.content for c in page.results)
                contents = await self._all_contents(api, sid)
            except NotFound:
                self._held.pop(sid, None)
                return []
        return _items(contents[-limit:] if limit and limit > 0 else contents)

    async def _all_contents(self, api: AsyncEndpoints, sid: str) -> list[str]:
        """Every stored item's JSON text of the agentstate session ``sid``. What this object read
        before is asked again only from its last item on: if that item is still there with its
        client id and the history generation is the same (no pop, rewind, clear or retention
        since), the answer adds what came after it; otherwise every item is read again."""
        url = session_url(self.user_id, sid, "messages")
        held = self._held.get(sid)
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
                self._held_hits += 1
                return self._hold(
                    sid,
                    page.generation,
                    [*held.keys, *((m.seq, m.client_id) for m in added)],
                    [*held.contents, *(m.content for m in added)],
                    held.size + sum(len(m.content) for m in added),
                )
        self._held_misses += 1
        call: Call[_Page] | None = Call("GET", url, _PAGE, params=query(page_size=PAGE_MAX))
        keys: list[tuple[int, str | None]] = []
        contents: list[str] = []
        generation = None
        while call is not None:
            page = await api._call(call)
            if generation not in (None, page.generation):  # edited while read: read again, keep nothing
                self._held.pop(sid, None)
                return [
                    m.content async for m in api._iterate(Call("GET", url, _PAGE, params=query(page_size=PAGE_MAX)))
                ]
            generation = page.generation
            keys.extend((m.seq, m.client_id) for m in page.results)
            contents.extend(m.content for m in page.results)
            call = call.with_cursor(page.next_cursor) if page.next_cursor else None
        return self._hold(sid, generation, keys, contents, sum(map(len, contents)))

    def _hold(
        self,
        sid: str,
        generation: str | None,
        keys: list[tuple[int, str | None]],
        contents: list[str],
        size: int,
    ) -> list[str]:
        """Keep ``contents`` of ``sid`` (``size`` characters) for the next whole read (at most
        ``HELD_MAX_ITEMS`` and ``HELD_MAX_CHARS``, the last with a client id to check it by);
        returns them."""
        if (
            generation is None
            or not keys
            or keys[-1][1] is None
            or len(contents) > HELD_MAX_ITEMS
            or size > HELD_MAX_CHARS
        ):
            self._held.pop(sid, None)
        else:
            self._held = {sid: _HeldItems(generation, keys, contents, size)}  # one branch
        return contents

    async def add_items(self, items: list[Any]) -> None:
        """Store the items in order; each batch is atomic and safe to retry (client ids)."""
        if not items:
            return
        messages = [item_message(item) for item in items]
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

    async def create_branch_from_content(self, search_term: str, branch_name: str | None = None) -> str:
        """``create_branch_from_turn`` at the first user turn ``find_turns_by_content`` finds."""
        matches = await self.find_turns_by_content(search_term)
        if not matches:
            raise ValueError(f"No user turns found containing '{search_term}'")
        return await self.create_branch_from_turn(matches[0]["turn"], branch_name)

    # --- turns (AdvancedSQLiteSession) -----------------------------------------------------------

    async def _user_messages(self, branch_id: str | None) -> list[MessageRecord]:
        """The user messages of a branch (current when None), oldest first: turn N is the N-th."""
        async with self._api() as api:
            try:
                return [
                    record
                    async for record in api.message_iter(
                        self.user_id, self._branch_sid(branch_id), role="user", page_size=RECENT_MAX
                    )
                ]
            except NotFound:
                return []

    async def get_conversation_turns(self, branch_id: str | None = None) -> list[dict[str, Any]]:
        """The branch's user turns: ``turn``, ``content`` (the first 100 characters), ``full_content``,
        ``timestamp`` (ISO 8601) and ``can_branch``."""
        turns = (_turn(record, n, 100) for n, record in enumerate(await self._user_messages(branch_id), 1))
        return [turn for turn in turns if turn is not None]

    async def find_turns_by_content(self, search_term: str, branch_id: str | None = None) -> list[dict[str, Any]]:
        """The branch's user turns whose text holds ``search_term``, as AdvancedSQLiteSession matches
        it: a substring, ASCII letters in any case (``content`` is the whole text here)."""
        matches = []
        for n, record in enumerate(await self._user_messages(branch_id), 1):
            turn = _turn(record, n, None)
            try:
                if turn is not None and _contains(turn["full_content"], search_term):
                    matches.append(turn)
            except AttributeError:  # a part that is no object: the SDK skips the turn too
                continue
        return matches

    async def _branch_items(self, branch_id: str | None) -> list[Any]:
        sid = self._branch_sid(branch_id)
        async with self._api() as api:
            try:
                return _items(await self._all_contents(api, sid))
            except NotFound:
                return []

    async def get_conversation_by_turns(self, branch_id: str | None = None) -> dict[int, list[dict[str, str | None]]]:
        """The branch's items by turn (0: before the first user message): each item's ``type``
        (user, assistant, or the item's type) and ``tool_name``."""
        turns: dict[int, list[dict[str, str | None]]] = {}
        turn = 0
        for item in await self._branch_items(branch_id):
            turn += _is_user(item)
            turns.setdefault(turn, []).append({"type": _kind(item), "tool_name": _tool_name(item)})
        return turns

    async def get_tool_usage(self, branch_id: str | None = None) -> list[tuple[str, int, int]]:
        """How often each tool was called per turn: ``(tool_name, calls, turn)``, by turn. A tool
        search's output counts as a call when its turn has no call of it."""
        counts: dict[tuple[int, str | None], int] = {}
        searched: set[tuple[int, str | None]] = set()
        outputs: list[tuple[int, str | None]] = []
        turn = 0
        for item in await self._branch_items(branch_id):
            turn += _is_user(item)
            kind, name = _kind(item), _tool_name(item)
            if kind in TOOL_CALLS:
                key = (turn, name if name is not None or kind not in ("shell_call", "apply_patch_call") else kind)
                counts[key] = counts.get(key, 0) + 1
                if kind == "tool_search_call":
                    searched.add((turn, name))
            elif kind == "tool_search_output":
                outputs.append((turn, name))
        for key in outputs:
            if key not in searched:
                counts[key] = counts.get(key, 0) + 1
        ordered = sorted(counts.items(), key=lambda entry: (entry[0][0], entry[0][1] is not None, entry[0][1] or ""))
        return [(cast(str, name), n, turn) for (turn, name), n in ordered]

    # --- usage (AdvancedSQLiteSession) -----------------------------------------------------------

    async def store_run_usage(self, result: Any) -> None:
        """Store the run's usage (``result.context_wrapper.usage``) as the current turn's, replacing
        what that turn had. As in the SDK, a failure is logged, never raised, and a branch with
        no items has no turn to store it for."""
        try:
            usage = result.context_wrapper.usage
            if usage is None:
                return
            async with self._api() as api:
                await api.run_usage_record(
                    self.user_id,
                    self._current(),
                    **{name: getattr(usage, name) or 0 for name in USAGE_COUNTS},
                    input_tokens_details=_usage_details(getattr(usage, "input_tokens_details", None)),
                    output_tokens_details=_usage_details(getattr(usage, "output_tokens_details", None)),
                )
        except Exception:
            logger.exception("Failed to store session usage (session %s)", self.session_id)

    async def _usage_of(self, sid: str) -> list[RunUsage]:
        """The usage rows of the agentstate session ``sid``, by turn (none when it does not exist)."""
        async with self._api() as api:
            try:
                return [row async for row in api.run_usage_iter(self.user_id, sid, page_size=RECENT_MAX)]
            except NotFound:
                return []

    async def get_session_usage(self, branch_id: str | None = None) -> dict[str, int] | None:
        """Usage summed over every branch (or ``branch_id``'s): the four counts and ``total_turns``;
        None when none was stored."""
        if branch_id:
            rows = await self._usage_of(self._branch_sid(branch_id))
        else:
            async with self._api() as api:
                family = [r for r in await self._family(api) if not _deleted(r)]
            rows = [row for record in family for row in await self._usage_of(record.session_id)]
        if not rows:
            return None
        totals = {name: sum(getattr(row, name) for row in rows) for name in USAGE_COUNTS}
        return {**totals, "total_turns": len(rows)}

    async def get_turn_usage(
        self, user_turn_number: int | None = None, branch_id: str | None = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The branch's usage per turn (``user_turn_number`` first in each), or one turn's without
        it ({} when that turn has none stored)."""

        def shown(row: RunUsage) -> dict[str, Any]:
            return {
                **{name: getattr(row, name) for name in USAGE_COUNTS},
                "input_tokens_details": row.input_tokens_details,
                "output_tokens_details": row.output_tokens_details,
            }

        rows = await self._usage_of(self._branch_sid(branch_id))
        if user_turn_number is not None:
            return next((shown(row) for row in rows if row.turn == user_turn_number), {})
        return [{"user_turn_number": row.turn, **shown(row)} for row in rows]

    # --- agentstate's own: rewind, fork, close ---------------------------------------------------

    async def rewind(self, turn_number: int) -> int:
        """Drop the current branch's turn ``turn_number`` and every later one (the history as it was
        before that user message; their usage goes with them); returns how many items went.
        ValueError when the branch has no such turn."""
        async with self._api() as api:
            turn_seq = await self._user_turn_seq(api, turn_number)
            if turn_seq is None:
                raise ValueError(f"Turn {turn_number} does not contain a user message in branch '{self._branch}'")
            edit = await api.message_rewind(self.user_id, self._current(), turn_seq - 1)
        return edit.removed_messages

    async def fork(self, new_session_id: str) -> AgentStateSession:
        """A new SDK session ``new_session_id`` of the same user, its ``main`` a copy of this
        session's current branch (its usage stays here); ValueError when that id is taken."""
        new = AgentStateSession(
            new_session_id,
            base_url=self._base_url,
            api_key=self._api_key,
            user_id=self.user_id,
            session_settings=self.session_settings,
            **self._client_options,
        )
        async with self._api() as api:
            try:
                await api.session_fork(
                    self.user_id,
                    self._current(),
                    new._current(),
                    metadata=new._metadata(MAIN),
                )
            except Conflict:
                raise ValueError(f"Session '{new_session_id}' already exists") from None
            except NotFound:  # nothing stored yet: the fork starts empty, as this session reads
                return new
            await api.session_update(self.user_id, new._current(), workspace_id=main_session_id(new_session_id))
        return new

    def close(self) -> None:
        """Close this object's connections (the stored history stays); it takes no more calls
        (RuntimeError), as the SDK's closed sessions. ``aclose`` from async code is the same."""
        self._closed = True
        self._clients.close_all()

    # --- plumbing --------------------------------------------------------------------------------

    def _api(self) -> _Borrowed:
        """The client of the running event loop: the SDK may call from several loops (``run_sync``,
        ``asyncio.run`` per turn), and an HTTP connection pool belongs to the loop that opened it
        (and is closed with it)."""
        if self._closed:
            raise RuntimeError("AgentStateSession is closed")
        return _Borrowed(self._clients.get())

    async def aclose(self) -> None:
        """Close the connections of the running event loop (the stored history stays)."""
        await self._clients.aclose()

    def _current(self) -> str:
        return branch_session_id(self.session_id, self._branch)

    def _branch_sid(self, branch_id: str | None) -> str:
        """The agentstate session of ``branch_id`` (the current branch when None)."""
        return self._current() if branch_id is None else branch_session_id(self.session_id, branch_id)

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
