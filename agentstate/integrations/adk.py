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
(HTTPS) URI schemes in ADK's service registry.
"""

from __future__ import annotations

import asyncio
import json
import os
import unicodedata
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
from agentstate.client.clients import USER_AGENT
from agentstate.client.errors import AgentStateError, NetworkError, error_from_response

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


class AgentStateSessionService(BaseSessionService):
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
        **_registry_kwargs: Any,
    ):
        if uri is not None:
            base_url = base_url_from_uri(uri)
        api_key = api_key or os.environ.get(API_KEY_ENV)
        if not base_url:
            raise ValueError("AgentStateSessionService needs the server's base_url (or uri=agentstate://host:port).")
        if not api_key:
            raise ValueError(f"AgentStateSessionService needs an API key (api_key=..., or {API_KEY_ENV}).")
        self._options: dict[str, Any] = {
            "base_url": base_url,
            "timeout": timeout,
            "transport": transport,
            "headers": {"X-Api-Key": api_key, "Accept": "application/json", "User-Agent": USER_AGENT},
        }
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    # --- HTTP ----------------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        """One connection pool per event loop: a pool is bound to the loop that opened it."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for closed in [other for other in self._clients if other.is_closed()]:
                del self._clients[closed]
            client = self._clients[loop] = httpx.AsyncClient(**self._options)
        return client

    async def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        for attempt in range(_RETRIES + 1):
            try:
                response = await self._http().request(method, url, **kwargs)
            except NOTHING_SENT as exc:
                if attempt == _RETRIES:
                    raise NetworkError(f"agentstate unreachable: {exc}") from exc
                await asyncio.sleep(0.2 * 2**attempt)
                continue
            except httpx.TransportError as exc:
                raise NetworkError(f"agentstate request failed: {exc}") from exc
            if response.is_success:
                return response
            raise error_from_response(response)
        raise AssertionError("unreachable")

    async def close(self) -> None:
        """Closes the connection pool of the running event loop."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

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
        params: dict[str, Any] = {}
        if config is not None and config.num_recent_events is not None:
            params["num_recent_events"] = config.num_recent_events
        if config is not None and config.after_timestamp:  # ADK's own services skip a zero too
            params["after_timestamp"] = repr(config.after_timestamp)
        url = self._url(app_name, user_id, session_id)
        try:
            # Parsed and validated in one pass from the bytes, as ADK's own stores read events.
            document = _SessionDocument.model_validate_json((await self._request("GET", url, params=params)).content)
        except AgentStateError as exc:
            if exc.status_code == 404:
                return None
            raise
        following = document.events_next
        while following:
            page = _EventPage.model_validate_json(
                (await self._request("GET", url + "events/", params={"cursor": following})).content
            )
            document.events.extend(page.events)
            following = page.next
        return _session(document.model_dump(exclude={"events", "events_next"}), events=document.events)

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
        try:
            await self._request("DELETE", self._url(app_name, user_id, session_id))
        except AgentStateError as exc:
            if exc.status_code != 404:  # deleting a missing session is no error in ADK
                raise

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return (await self._request("GET", self._url(app_name, user_id, None, "state"))).json()["state"]

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        body: dict[str, Any] = {"event": event.model_dump_json(exclude_none=True)}
        marker = session._storage_update_marker
        if marker is not None and marker.startswith(_MARKER_PREFIX):
            body["expected_version"] = int(marker.removeprefix(_MARKER_PREFIX))
        else:  # a session object that did not come from this service: ADK's timestamp rule
            body["last_update_time"] = session.last_update_time
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


class _EventPage(BaseModel):
    events: list[Event]
    next: str | None = None


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


def register() -> None:
    """Makes ``--session_service_uri agentstate://…`` (and ``agentstates://``) build this service:
    done on import; call it again from an agents directory's ``services.py``."""
    from google.adk.cli.service_registry import get_service_registry

    registry = get_service_registry()
    for scheme in SCHEMES:
        registry.register_session_service(scheme, lambda uri, **kwargs: AgentStateSessionService(uri=uri, **kwargs))


register()
