"""Drop-in replacements for AgentScope's ``StateService`` and ``SessionHistoryService`` backed by agentstate.

Same method names, arguments and return types as the in-memory services in the seeds, constructed
as ``Cls(base_url, api_key)``. Where the server is stricter than a dict, the adapters keep the
seed's observable behaviour without destroying data; docs/CLIENT.md lists each difference.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Dict, List, Optional, Union

from pydantic import BaseModel, Field

from agentstate.client.clients import AsyncAgentStateClient
from agentstate.client.errors import AgentStateError, Conflict, NotFound
from agentstate.client.models import MessageRecord, SessionRecord

logger = logging.getLogger("agentstate.client")

DEFAULT_SESSION_ID = "default"
# AgentScope Message fields the server stores, under the server's name when it differs.
_STORED_FIELDS = {
    "id": "client_id",
    "type": "type",
    "status": "status",
    "role": "role",
    "name": "name",
    "content": "content",
    "metadata": "metadata",
    "usage": "usage",
}


class Message(BaseModel):
    """A history item with AgentScope's ``Message`` fields; ``id`` is stored as the server's ``client_id``,
    which makes a repeated append of the same message a no-op."""

    id: str = Field(default_factory=lambda: f"msg_{uuid.uuid4()}")
    object: str = "message"
    type: str = "message"
    status: str = "created"
    role: Optional[str] = None
    name: Optional[str] = None
    content: Optional[Union[str, List[Dict[str, Any]]]] = None
    metadata: Optional[Dict[str, Any]] = None
    usage: Optional[Dict[str, Any]] = None

    @classmethod
    def from_record(cls, record: MessageRecord) -> Message:
        """The message as stored; one appended without a client id gets a stable id from its ``seq``.

        The server stores an absent name or metadata as empty: they come back as AgentScope's None."""
        fields = {ours: getattr(record, theirs) for ours, theirs in _STORED_FIELDS.items()}
        fields.update(
            id=record.client_id or f"seq-{record.seq}", name=record.name or None, metadata=record.metadata or None
        )
        return cls.model_validate({k: v for k, v in fields.items() if v is not None})


class Session(BaseModel):
    """A conversation: ``id``, the owning ``user_id`` and its ``messages`` (empty in lists)."""

    id: str
    user_id: str
    messages: List[Union[Message, Dict[str, Any]]] = []

    @classmethod
    def from_record(cls, record: SessionRecord) -> Session:
        return cls(id=record.session_id, user_id=record.user_id)


def _stored(message: Any) -> Dict[str, Any]:
    """The API's MessageIn for a Message, an AgentScope Message (any pydantic model) or a dict."""
    data = message.model_dump(mode="json", exclude_none=True) if isinstance(message, BaseModel) else dict(message)
    if not data.get("id"):
        data["id"] = f"msg_{uuid.uuid4()}"
    return {theirs: data[ours] for ours, theirs in _STORED_FIELDS.items() if data.get(ours) is not None}


class _Remote:
    """Shares the connection handling of both adapters; the client opens on ``start``."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self._base_url = base_url
        self._api_key = api_key
        self._client: Optional[AsyncAgentStateClient] = None

    async def start(self) -> None:
        if self._client is None:
            self._client = AsyncAgentStateClient(self._base_url, self._api_key)

    async def stop(self) -> None:
        """Close the connection; unlike the in-memory seeds, the stored data stays."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _server_healthy(self) -> bool:
        try:
            return (await self._api().health()).get("status") == "ok"
        except AgentStateError:
            return False

    def _api(self) -> AsyncAgentStateClient:
        if self._client is None:
            raise RuntimeError("Service not started")
        return self._client


class RemoteStateService(_Remote):
    """AgentScope ``StateService``: per-round state snapshots of ``(user_id, session_id)``."""

    async def health(self) -> bool:
        """True once started and while the server reports itself healthy."""
        return self._client is not None and await self._server_healthy()

    async def save_state(
        self,
        user_id: str,
        state: Dict[str, Any],
        session_id: Optional[str] = None,
        round_id: Optional[int] = None,
    ) -> int:
        """Save ``state`` as round ``round_id`` (overwriting it), or as a new round ``max + 1`` (or 1)."""
        saved = await self._api().round_save(user_id, session_id or DEFAULT_SESSION_ID, state, round_id=round_id)
        return saved.round_id

    async def export_state(
        self,
        user_id: str,
        session_id: Optional[str] = None,
        round_id: Optional[int] = None,
    ) -> Optional[Dict[str, Any]]:
        """The state of round ``round_id``, or of the largest round id; None when there is none."""
        api, sid = self._api(), session_id or DEFAULT_SESSION_ID
        read = api.round_latest(user_id, sid) if round_id is None else api.round_get(user_id, sid, round_id)
        try:
            saved = await read
        except NotFound:
            return None
        return saved.state


class RemoteSessionHistoryService(_Remote):
    """AgentScope ``SessionHistoryService``: sessions and their message history.

    Like the seed, it works without ``start()`` (the connection then opens on first use)."""

    async def health(self) -> bool:
        """True while the server reports itself healthy."""
        await self.start()
        return await self._server_healthy()

    async def create_session(self, user_id: str, session_id: Optional[str] = None) -> Session:
        """Create a session (a blank id gets a UUID); an existing id returns that session, untouched."""
        await self.start()
        wanted = session_id.strip() if session_id and session_id.strip() else None
        try:
            return Session.from_record(await self._api().session_create(user_id, wanted))
        except Conflict as exc:
            if exc.code != "session_exists":
                raise
        return await self._load(user_id, wanted)

    async def get_session(self, user_id: str, session_id: str) -> Optional[Session]:
        """The session with its messages; a missing one is created and returned empty, as the seed does."""
        await self.start()
        try:
            return await self._load(user_id, session_id)
        except NotFound:
            pass
        try:
            return Session.from_record(await self._api().session_create(user_id, session_id))
        except Conflict as exc:  # created meanwhile by another worker
            if exc.code != "session_exists":
                raise
        return await self._load(user_id, session_id)

    async def delete_session(self, user_id: str, session_id: str) -> None:
        """Delete the session and its history; a missing session is no error."""
        await self.start()
        try:
            await self._api().session_delete(user_id, session_id)
        except NotFound:
            pass

    async def list_sessions(self, user_id: str) -> list[Session]:
        """The user's sessions, oldest first, without their messages."""
        await self.start()
        return [Session.from_record(record) async for record in self._api().session_iter(user_id=user_id)]

    async def append_message(
        self,
        session: Session,
        message: Union[Message, List[Message], Dict[str, Any], List[Dict[str, Any]]],
    ) -> None:
        """Store one message or a list, atomically, and extend ``session.messages`` with them.

        Dicts become ``Message`` objects (with a generated ``id`` when they have none); message
        objects are kept as given. A session missing on the server is logged and nothing is stored,
        as the seed does."""
        await self.start()
        items = message if isinstance(message, list) else [message]
        normalised = [m if isinstance(m, BaseModel) else Message.model_validate(m) for m in items]
        if not normalised:
            return
        try:
            await self._api().message_append(session.user_id, session.id, [_stored(m) for m in normalised])
        except NotFound:
            logger.warning(
                "session %r of user %r not found: append_message stored nothing", session.id, session.user_id
            )
        session.messages.extend(normalised)

    async def _load(self, user_id: str, session_id: str) -> Session:
        """The session with all its messages; NotFound when it does not exist."""
        pages = self._api().message_iter(user_id, session_id, page_size=500)
        return Session(id=session_id, user_id=user_id, messages=[Message.from_record(m) async for m in pages])
