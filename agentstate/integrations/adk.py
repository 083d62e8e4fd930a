"""Google ADK's ``BaseSessionService`` backed by agentstate: the one-line switch for ADK apps.

    session_service = AgentStateSessionService("http://localhost:8000", api_key)
    # or, as ADK's service registry builds it (adk web / adk api_server):
    #   --session_service_uri agentstate://localhost:8000   (key from AGENTSTATE_API_KEY)

ADK's semantics win (docs/CLIENT.md lists the few differences): a missing session is ``None``,
an existing session id or an event id the session already holds raises ``AlreadyExistsError``,
a stale writer ``StaleSessionError``, ``temp:`` keys are never stored, ``user:`` state is kept as
the user's data. Each event is stored with its state delta in one request (one transaction on the
server) and read back unchanged, in pages.

Identifiers: agentstate's are 1-128 characters without ``/`` or control characters; ADK accepts
any string. They are mapped reversibly (``%`` -> ``%25``, ``/`` and control characters -> ``%XX``,
the empty string -> ``%``), so ordinary ids are stored as they are and erasure finds them by
the same user id. Importing this module registers the ``agentstate`` (HTTP) and ``agentstates``
(HTTPS) URI schemes in ADK's service registry, for its session, memory and artifact services.
"""

from __future__ import annotations

import asyncio
import bisect
import importlib
import json
import os
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import httpx
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
from google.adk.sessions.session import Session
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from agentstate.client.calls import NOTHING_SENT, segment
from agentstate.client.clients import async_transport, http_options
from agentstate.client.errors import AgentStateError, error_from_response, network_error
from agentstate.client.loops import LoopClients
from agentstate.client.tracing import async_request_hooks

__all__ = ["AgentStateSessionService", "identifier_decode", "identifier_encode", "register"]

API_KEY_ENV = "AGENTSTATE_API_KEY"
SCHEMES = {"agentstate": "http", "agentstates": "https"}
_MARKER_PREFIX = "agentstate:"  # our session version, in ADK's private storage-revision slot
_RETRIES = 2  # extra tries of a request that never reached the server


def identifier_encode(value: str) -> str:
    """An ADK id as an agentstate identifier (reversible, the identity on ordinary ids)."""
    if value == "":
        return "%"
    return "".join(f"%{ord(ch):02X}" if ch in "%/" or unicodedata.category(ch) == "Cc" else ch for ch in value)


def identifier_decode(value: str) -> str:
    """The ADK id an agentstate identifier stands for."""
    return "" if value == "%" else unquote(value)


def base_url_from_uri(uri: str) -> str:
    """``agentstate://host:port/prefix`` -> ``http://host:port/prefix`` (``agentstates`` -> https)."""
    parsed = urlparse(uri)
    if parsed.scheme not in SCHEMES or not parsed.netloc:
        raise ValueError(f"not an agentstate URI (agentstate://host[:port][/path]): {uri!r}")
    return f"{SCHEMES[parsed.scheme]}://{parsed.netloc}{parsed.path.rstrip('/')}"


class AgentStateHttp:
    """The HTTP side of every ADK service kept by agentstate: ``(base_url, api_key)``, or
    ``uri="agentstate://…"`` with the key from ``AGENTSTATE_API_KEY`` (how ADK's service registry
    builds services), one connection pool per event loop, and the retries of a request that never
    reached the server."""

    def _connect(
        self,
        base_url: str | None,
        api_key: str | None,
        *,
        uri: str | None,
        timeout: float,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        if uri is not None:
            base_url = base_url_from_uri(uri)
        api_key = api_key or os.environ.get(API_KEY_ENV)
        name = type(self).__name__
        if not base_url:
            raise ValueError(f"{name} needs the server's base_url (or uri=agentstate://host:port).")
        if not api_key:
            raise ValueError(f"{name} needs an API key (api_key=..., or {API_KEY_ENV}).")
        # The caller's trace context goes with each request (async_request_hooks).
        options = http_options(base_url, api_key, timeout, async_request_hooks())
        self._options: dict[str, Any] = options
        # One connection pool per event loop, closed with it: a pool is bound to the loop that opened it.
        self._clients = LoopClients(lambda: httpx.AsyncClient(**options, transport=transport or async_transport()))

    async def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        for attempt in range(_RETRIES + 1):
            try:
                response = await self._clients.get().request(method, url, **kwargs)
            except NOTHING_SENT as exc:
                if attempt == _RETRIES:
                    raise network_error(exc) from exc
                await asyncio.sleep(0.2 * 2**attempt)
                continue
            except httpx.TransportError as exc:
                raise network_error(exc) from exc
            if response.is_success:
                return response
            raise error_from_response(response)
        raise AssertionError("unreachable")

    async def close(self) -> None:
        """Closes the connection pool of the running event loop."""
        await self._clients.aclose()


class AgentStateSessionService(BaseSessionService, AgentStateHttp):
    """ADK sessions, events and state kept by an agentstate server.

    ``AgentStateSessionService(base_url, api_key)``, or ``AgentStateSessionService(uri="agentstate://…")``
    with the key from ``AGENTSTATE_API_KEY`` (how ADK's service registry builds services; other
    keyword arguments it passes, such as ``agents_dir``, are ignored)."""

    list_page_size = 500  # sessions per request of list_sessions (the server's maximum)

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        uri: str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        cache_max_bytes: int = 32 * 2**20,
        **_registry_kwargs: Any,
    ):
        self._connect(base_url, api_key, uri=uri, timeout=timeout, transport=transport)
        self._held = _HeldSessions(cache_max_bytes)

    def cache_info(self) -> dict[str, int]:
        """The read cache: ``hits`` (reads that reused held events), ``misses`` (reads of every
        event), ``sessions`` and ``bytes`` held (the events' JSON as it came), ``max_bytes``."""
        return self._held.info()

    @staticmethod
    def _url(app_name: str, user_id: str | None = None, session_id: str | None = None, *rest: str) -> str:
        parts = ["/api/v1/adk/apps", segment(identifier_encode(app_name))]
        if user_id is not None:
            parts += ["users", segment(identifier_encode(user_id))]
        if session_id is not None:
            parts += ["sessions", segment(identifier_encode(session_id))]
        return "/".join([*parts, *rest]) + "/"

    # --- BaseSessionService ---------------------------------------------------------------------

    async def create_session(
        self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None, session_id: str | None = None
    ) -> Session:
        body: dict[str, Any] = {"state": _state_text(state or {})}
        if session_id is not None and session_id.strip():
            body["session_id"] = identifier_encode(session_id.strip())
        try:
            response = await self._request("POST", self._url(app_name, user_id, None, "sessions"), json=body)
        except AgentStateError as exc:
            if exc.code == "session_exists":
                raise AlreadyExistsError(f"Session with id {session_id} already exists.") from exc
            raise
        return _session(response.json(), events=[])

    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        session = await self._get_session(app_name, user_id, session_id, config)
        if session is None and session_id != session_id.strip():  # stored padded (imported), or not at all
            session = await self._get_session(app_name, user_id, session_id.strip(), config)
        return session

    async def _get_session(
        self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
    ) -> Session | None:
        """The session under exactly this id, or None."""
        key = (app_name, user_id, session_id)
        window = config is not None and (config.num_recent_events is not None or bool(config.after_timestamp))
        held = self._held.get(key)
        url = self._url(app_name, user_id, session_id)
        if window and held is None:
            return await self._get_window(url, config)
        try:
            document, size = await self._get(url, {"held": held.token} if held else {})
            events: list[Event] = held.events if held else []
            while document.events_held:  # the held events are still the session's: add the new ones
                events, size = _merged(events, document.events), size + (held.size if held else 0)
                held = _Held(document.events_token or "", events, size)
                if not document.events_more:
                    break
                document, size = await self._get(url, {"held": held.token})
            if not document.events_held:  # every event: nothing held, or the held ones changed
                events, size = await self._all_events(url, document, size)
                held = _Held(document.events_token or "", events, size)
        except AgentStateError as exc:
            if exc.status_code == 404:
                self._held.drop(key)
                return None
            raise
        assert held is not None  # noqa: S101 (set by either branch)
        self._held.put(key, held, hit=document.events_held)
        events = list(events)  # the caller's list: its appends must not reach the cache
        if window:
            assert config is not None  # noqa: S101 (window implies it)
            events = _windowed(events, config)
        return _session(document.model_dump(include=_SESSION_FIELDS), events=events)

    async def _get(self, url: str, params: dict[str, Any]) -> tuple[_SessionDocument, int]:
        """A session read, and its size in bytes."""
        response = await self._request("GET", url, params=params)
        # Parsed and validated in one pass from the bytes, as ADK's own stores read events.
        return _SessionDocument.model_validate_json(response.content), len(response.content)

    async def _all_events(self, url: str, document: _SessionDocument, size: int) -> tuple[list[Event], int]:
        """The events of a whole read, the answer's and the pages that follow it, and their size."""
        events, following = document.events, document.events_next
        while following:
            response = await self._request("GET", url + "events/", params={"cursor": following})
            page = _EventPage.model_validate_json(response.content)
            events.extend(page.events)
            size += len(response.content)
            following = page.next
        return events, size

    async def _get_window(self, url: str, config: GetSessionConfig | None) -> Session | None:
        """A ``GetSessionConfig`` window of a session this process holds nothing of: the server
        picks the events."""
        assert config is not None  # noqa: S101 (only called with a window)
        params: dict[str, Any] = {}
        if config.num_recent_events is not None:
            params["num_recent_events"] = config.num_recent_events
        if config.after_timestamp:  # ADK's own services skip a zero too
            params["after_timestamp"] = repr(config.after_timestamp)
        try:
            document, size = await self._get(url, params)
        except AgentStateError as exc:
            if exc.status_code == 404:
                return None
            raise
        events, _ = await self._all_events(url, document, size)
        return _session(document.model_dump(include=_SESSION_FIELDS), events=events)

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        params: dict[str, Any] = {"page_size": self.list_page_size}
        if user_id is not None:
            params["user_id"] = identifier_encode(user_id)
        sessions: list[Session] = []
        while True:
            page = (await self._request("GET", self._url(app_name, None, None, "sessions"), params=params)).json()
            sessions.extend(_session(document, events=[]) for document in page["sessions"])
            if not page["next"]:
                return ListSessionsResponse(sessions=sessions)
            params["cursor"] = page["next"]

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        if not await self._delete_session(app_name, user_id, session_id) and session_id != session_id.strip():
            await self._delete_session(app_name, user_id, session_id.strip())

    async def _delete_session(self, app_name: str, user_id: str, session_id: str) -> bool:
        """Deletes the session under exactly this id; False if there was none (no error in ADK)."""
        self._held.drop((app_name, user_id, session_id))
        try:
            await self._request("DELETE", self._url(app_name, user_id, session_id))
        except AgentStateError as exc:
            if exc.status_code != 404:
                raise
            return False
        return True

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return (await self._request("GET", self._url(app_name, user_id, None, "state"))).json()["state"]

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        body: dict[str, Any] = {"event": event.model_dump_json(exclude_none=True)}
        marker = session._storage_update_marker
        body["last_update_time"] = session.last_update_time  # with the version: which session of its id
        if marker is not None and marker.startswith(_MARKER_PREFIX):
            body["expected_version"] = int(marker.removeprefix(_MARKER_PREFIX))
        else:  # a session object that did not come from this service: ADK's timestamp rule
            body["last_event_id"] = session.events[-1].id if session.events else None
        url = self._url(session.app_name, session.user_id, session.id, "events")
        try:
            result = (await self._request("POST", url, json=body)).json()
        except AgentStateError as exc:
            if exc.code == "stale_session":
                raise StaleSessionError(exc.message) from exc
            if exc.code == "event_exists":  # ADK's stores raise their driver's IntegrityError here
                raise AlreadyExistsError(f"Event with id {event.id} already exists in session {session.id}.") from exc
            if exc.status_code == 404:
                raise SessionNotFoundError(f"Session {session.id} not found.") from exc
            raise
        session.last_update_time = result["last_update_time"]
        session._storage_update_marker = f"{_MARKER_PREFIX}{result['version']}"
        return self._commit_event_to_session(session, event)


class _SessionDocument(BaseModel):
    id: str
    app_name: str
    user_id: str
    state: dict[str, Any]
    last_update_time: float
    version: int
    events: list[Event]
    events_next: str | None = None
    events_token: str | None = None  # a whole read's: what this process then holds
    events_held: bool = False  # events are only those after what the read's held token named
    events_more: bool = False


_SESSION_FIELDS = {"id", "app_name", "user_id", "state", "last_update_time", "version"}


class _EventPage(BaseModel):
    events: list[Event]
    next: str | None = None


@dataclass(frozen=True)
class _Held:
    """A session's events as this process last read them whole, and the server's token for them."""

    token: str
    events: list[Event]  # oldest first, as the server orders them; never handed out itself
    size: int  # bytes of the answers they came in


class _HeldSessions:
    """What this process read of sessions, least recently read dropped first past ``max_bytes``.
    Every read still asks the server, sending the held token: the server answers with only the
    events appended since, or with every event when the held ones are no longer the session's
    (another writer's event is always seen; retention, an erasure or a new session of the same
    id make the server send everything again). Events are shared between the sessions returned,
    as with ADK's in-memory service's light copies: treat them as read-only."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._sessions: OrderedDict[tuple[str, str, str], _Held] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # ADK may call from several event loops, each in its thread
        self.hits = self.misses = 0

    def get(self, key: tuple[str, str, str]) -> _Held | None:
        with self._lock:
            return self._sessions.get(key)

    def put(self, key: tuple[str, str, str], held: _Held, *, hit: bool) -> None:
        """Hold ``held`` for ``key``; ``hit``: the read that gave it reused what was held."""
        with self._lock:
            before = self._sessions.pop(key, None)
            if before is not None:
                self._bytes -= before.size
            if hit:
                self.hits += 1
            else:
                self.misses += 1
            if not held.token or held.size > self.max_bytes:
                return
            self._sessions[key] = held
            self._bytes += held.size
            while self._bytes > self.max_bytes:
                _, dropped = self._sessions.popitem(last=False)
                self._bytes -= dropped.size

    def drop(self, key: tuple[str, str, str]) -> None:
        with self._lock:
            before = self._sessions.pop(key, None)
            if before is not None:
                self._bytes -= before.size

    def info(self) -> dict[str, int]:
        with self._lock:
            return {
                "hits": self.hits,
                "misses": self.misses,
                "sessions": len(self._sessions),
                "bytes": self._bytes,
                "max_bytes": self.max_bytes,
            }


def _merged(held: list[Event], new: list[Event]) -> list[Event]:
    """``held`` (oldest first by timestamp, then append order) with ``new`` events, appended after
    every held one, each in its place: after the held events of the same or an earlier time."""
    events = list(held)
    for event in new:  # in append order
        if not events or events[-1].timestamp <= event.timestamp:
            events.append(event)
        else:
            events.insert(bisect.bisect_right(events, event.timestamp, key=lambda e: e.timestamp), event)
    return events


def _windowed(events: list[Event], config: GetSessionConfig) -> list[Event]:
    """``GetSessionConfig``'s window of a session's events, as the server and ADK's database and
    SQLite services pick it: the events at or after ``after_timestamp`` (a zero skipped, as
    theirs), the last ``num_recent_events`` of those (all of them when fewer are left)."""
    if config.after_timestamp:
        after = config.after_timestamp
        events = events[bisect.bisect_left(events, after, key=lambda e: e.timestamp) :]
    if config.num_recent_events is not None:
        events = events[-config.num_recent_events :] if config.num_recent_events else []
    return events


def _state_text(state: dict[str, Any]) -> str:
    """State as JSON text; values JSON cannot hold become their repr, as ADK's own stores do."""
    try:
        return json.dumps(to_jsonable_python(state))
    except (TypeError, ValueError):
        return json.dumps(to_jsonable_python(state, fallback=repr))


def _session(document: dict[str, Any], *, events: list[Event]) -> Session:
    session = Session(
        id=identifier_decode(document["id"]),
        app_name=identifier_decode(document["app_name"]),
        user_id=identifier_decode(document["user_id"]),
        state=document["state"],
        events=events,
        last_update_time=document["last_update_time"],
    )
    session._storage_update_marker = f"{_MARKER_PREFIX}{document['version']}"
    return session


# ADK's three services agentstate offers, by import path: each is imported when ADK first builds it
# from a URI, so registering needs none of them but this module.
SERVICE_CLASSES = {
    "session": "agentstate.integrations.adk.AgentStateSessionService",
    "memory": "agentstate.integrations.adk_memory.AgentStateMemoryService",
    "artifact": "agentstate.integrations.adk_artifacts.AgentStateArtifactService",
}


def _factory(class_path: str) -> Callable[..., Any]:
    """Builds the service as ADK builds one from ``services.yaml``: ``cls(uri=uri, **kwargs)``."""

    def build(uri: str, **kwargs: Any) -> Any:
        module, name = class_path.rsplit(".", 1)
        return getattr(importlib.import_module(module), name)(uri=uri, **kwargs)

    return build


def register() -> None:
    """Makes ``--session_service_uri``, ``--memory_service_uri`` and ``--artifact_service_uri``
    ``agentstate://…`` (and ``agentstates://``) build agentstate's services: done on import, and by
    the ``services.py`` that ``agentstate adk-services`` writes into an agents directory."""
    from google.adk.cli.service_registry import get_service_registry

    registry = get_service_registry()
    register_by_kind = {
        "session": registry.register_session_service,
        "memory": registry.register_memory_service,
        "artifact": registry.register_artifact_service,
    }
    for kind, class_path in SERVICE_CLASSES.items():
        for scheme in SCHEMES:
            register_by_kind[kind](scheme, _factory(class_path))


register()
