"""What the server answers, as typed models.

Models accept fields they do not know (``extra="allow"``) so an older client keeps working when
the server adds one. ``version`` is the number the server sends as ``ETag``; pass it back as
``expected_version`` to make a write fail (412) if someone else wrote in between.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class SessionRecord(_Model):
    """A session as the server stores it (lists leave out nothing but messages, which it never carries)."""

    user_id: str
    session_id: str
    agent_id: str | None = None
    workspace_id: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    ended_at: datetime | None = None
    ended_by_retention: bool | None = None  # retention's idle end: the next write reopens the session
    message_count: int | None = None
    last_seq: int | None = None
    history_generation: int | None = None
    forked_from: dict[str, Any] | None = None  # {"session_id", "seq", "round"} of a fork's parent
    version: int | None = None


class MessageRecord(_Model):
    """One stored message: what was appended plus its ``seq`` within the session (gap-free between
    edits, never reused)."""

    seq: int
    client_id: str | None = None
    role: str | None = None
    type: str | None = None
    status: str | None = None
    name: str | None = None
    content: str | list[dict[str, Any]] | None = None
    metadata: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    created_at: datetime | None = None


class MessageHit(_Model):
    """A message found by ``message_search``: where it is (session and seq), how well it matched
    (``rank``, higher is better, within one search) and a snippet with the matched words between **."""

    session_id: str
    seq: int
    role: str | None = None
    rank: float
    snippet: str


class MemoryHit(_Model):
    """A memory item found by ``memory_search``: the item (as LangGraph's store holds it) and how
    well it matched (``score``: how many of the query's words it holds, plus under 1 for how rare
    they are; compare it only within one search)."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float


class HistoryEdit(_Model):
    """What a rewind or clear removed, and the session after it (``history_generation`` advanced
    when anything was removed)."""

    removed_messages: int
    removed_rounds: int
    session: SessionRecord


class Round(_Model):
    """A state snapshot at ``round_id``; ``state`` is None in list items, which leave it out."""

    round_id: int
    state: dict[str, Any] | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    version: int | None = None


class Checkpoint(_Model):
    """A labelled snapshot; ``state`` is None in list items, which leave it out."""

    id: int | str
    label: str
    state: dict[str, Any] | None = None
    created_at: datetime | None = None


class Transition(_Model):
    """A hand-off from one agent to another within a session."""

    id: int | str
    from_agent: str | None = None
    to_agent: str
    reason: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None


class RunUsage(_Model):
    """The model usage of one turn of a session (turn N: from its N-th user message on)."""

    turn: int
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    input_tokens_details: dict[str, Any] | None = None
    output_tokens_details: dict[str, Any] | None = None
    updated_at: datetime | None = None


class UserDatum(_Model):
    """One fact about a user: ``value`` is any JSON."""

    key: str
    value: Any = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class SessionRestore(_Model):
    """What survives of a session to resume it: the session, its checkpoints, its working state."""

    session: SessionRecord
    checkpoints: list[Checkpoint]
    working_state: dict[str, Any]


class Page(BaseModel, Generic[T]):
    """One page of a list; pass ``next_cursor`` as ``cursor`` for the following page."""

    results: list[T]
    next: str | None = None
    previous: str | None = None

    @property
    def next_cursor(self) -> str | None:
        """The cursor of the next page, taken from the ``next`` link (None on the last page)."""
        if not self.next:
            return None
        return parse_qs(urlsplit(self.next).query).get("cursor", [None])[0]
