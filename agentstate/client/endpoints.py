"""Every endpoint of API v1, written once for both clients.

Each method builds a ``Call`` and hands it to the transport: ``AgentStateClient`` runs it and
returns the result, ``AsyncAgentStateClient`` returns an awaitable of the same result. List
methods return one ``Page``; the matching ``*_iter`` methods follow ``next`` to the end.
Identifiers come first and positionally; everything else is keyword-only.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx
import pydantic

from agentstate.client import calls
from agentstate.client.calls import API, Call, as_json, as_model, as_nothing, as_page, if_match, query, session_url
from agentstate.client.models import (
    Checkpoint,
    HistoryEdit,
    MemoryHit,
    MessageHit,
    MessageRecord,
    Page,
    Round,
    RunUsage,
    SessionRecord,
    SessionRestore,
    Transition,
    UserDatum,
)

SESSION_FILTERS = frozenset(
    {
        "user_id",
        "agent_id",
        "workspace_id",
        "ended",
        "created_after",
        "created_before",
        "updated_after",
        "updated_before",
    }
)


def _session_list(filters: dict[str, Any], page_size: int | None, cursor: str | None) -> Call[Page[SessionRecord]]:
    unknown = set(filters) - SESSION_FILTERS
    if unknown:  # the server ignores unknown filters: a typo would silently list everything
        raise TypeError(f"unknown session filters: {', '.join(sorted(unknown))}")
    params = query(**filters, page_size=page_size, cursor=cursor)
    return Call("GET", f"{API}/sessions/", as_page(SessionRecord), params=params)


def _messages(user_id: str, session_id: str, params: dict[str, str]) -> Call[Page[MessageRecord]]:
    return Call("GET", session_url(user_id, session_id, "messages"), as_page(MessageRecord), params=params)


def _search(user_id: str, found: type, q: str, limit: int | None, cursor: str | None) -> Call[Page[Any]]:
    """A search of the user's messages (``MessageHit``) or memories (``MemoryHit``)."""
    what = "messages" if found is MessageHit else "memories"
    url = f"{API}/users/{calls.segment(user_id)}/{what}/search/"
    return Call("GET", url, as_page(found), params=query(q=q, limit=limit, cursor=cursor))


def _listing(url: str, cls: type, page_size: int | None, cursor: str | None = None) -> Call[Page[Any]]:
    return Call("GET", url, as_page(cls), params=query(page_size=page_size, cursor=cursor))


class _Appended(pydantic.BaseModel):
    messages: list[MessageRecord]


def _appended(response: httpx.Response) -> list[MessageRecord]:
    return calls.parsed(_Appended, response).messages


def _recent_page(response: httpx.Response) -> list[MessageRecord]:
    return as_page(MessageRecord)(response).results


class _Popped(pydantic.BaseModel):
    message: MessageRecord | None


def _popped(response: httpx.Response) -> MessageRecord | None:
    return calls.parsed(_Popped, response).message


class Endpoints(abc.ABC):
    """The API, independent of sync or async: subclasses say how a ``Call`` runs."""

    @abc.abstractmethod
    def _call(self, call: Call[Any]) -> Any:
        """Run one call: its result (sync) or an awaitable of it (async)."""

    @abc.abstractmethod
    def _iterate(self, call: Call[Page[Any]]) -> Any:
        """Every item of a list, page after page: an iterator (sync) or an async iterator."""

    # --- sessions -------------------------------------------------------------------------------
    def session_create(
        self,
        user_id: str,
        session_id: str | None = None,
        *,
        agent_id: str | None = None,
        workspace_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionRecord:
        """Create a session (blank ``session_id``: the server picks a UUID); an existing id raises Conflict."""
        payload = _given(
            user_id=user_id, session_id=session_id, agent_id=agent_id, workspace_id=workspace_id, metadata=metadata
        )
        return self._call(Call("POST", f"{API}/sessions/", as_model(SessionRecord), json=payload))

    def session_get(self, user_id: str, session_id: str) -> SessionRecord:
        return self._call(Call("GET", session_url(user_id, session_id), as_model(SessionRecord)))

    def session_update(
        self,
        user_id: str,
        session_id: str,
        *,
        agent_id: str | None = None,
        workspace_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> SessionRecord:
        """Change the given fields (None leaves one as it is); a stale ``expected_version`` raises
        PreconditionFailed."""
        payload = _given(agent_id=agent_id, workspace_id=workspace_id, metadata=metadata)
        return self._call(
            Call(
                "PATCH",
                session_url(user_id, session_id),
                as_model(SessionRecord),
                json=payload,
                headers=if_match(expected_version),
            )
        )

    def session_end(self, user_id: str, session_id: str, *, expected_version: int | None = None) -> SessionRecord:
        """Mark the session ended: it stays readable, refuses new writes, and its working state is gone.
        A stale ``expected_version`` of a live session raises PreconditionFailed."""
        return self._call(
            Call(
                "POST",
                session_url(user_id, session_id, "end"),
                as_model(SessionRecord),
                headers=if_match(expected_version),
            )
        )

    def session_delete(self, user_id: str, session_id: str, *, expected_version: int | None = None) -> None:
        """Delete the session with its messages, rounds, checkpoints, transitions and working state;
        a stale ``expected_version`` raises PreconditionFailed and deletes nothing."""
        return self._call(
            Call("DELETE", session_url(user_id, session_id), as_nothing, headers=if_match(expected_version))
        )

    def session_restore(self, user_id: str, session_id: str) -> SessionRestore:
        return self._call(Call("GET", session_url(user_id, session_id, "restore"), as_model(SessionRestore)))

    def session_list(
        self, *, page_size: int | None = None, cursor: str | None = None, **filters: Any
    ) -> Page[SessionRecord]:
        """One page of sessions, without messages. Filters: user_id, agent_id, workspace_id, ended (bool),
        created_after/created_before/updated_after/updated_before (datetimes)."""
        return self._call(_session_list(filters, page_size, cursor))

    def session_iter(self, *, page_size: int | None = None, **filters: Any) -> Iterator[SessionRecord]:
        """Every session matching ``session_list``'s filters."""
        return self._iterate(_session_list(filters, page_size, None))

    # --- messages -------------------------------------------------------------------------------
    def message_append(
        self, user_id: str, session_id: str, messages: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> list[MessageRecord]:
        """Append one message or a list, atomically; returns them stored, with ``seq``.

        When every message has a ``client_id`` the append is safe to repeat (the server returns the
        stored ones instead of storing twice), so it is retried on connection errors like a GET."""
        items = [dict(messages)] if isinstance(messages, Mapping) else [dict(m) for m in messages]
        retry_safe = bool(items) and all(item.get("client_id") for item in items)
        return self._call(
            Call(
                "POST",
                session_url(user_id, session_id, "messages"),
                _appended,
                json={"messages": items},
                idempotent=retry_safe,
            )
        )

    def message_list(
        self,
        user_id: str,
        session_id: str,
        *,
        after_seq: int | None = None,
        role: str | None = None,
        page_size: int | None = None,
        cursor: str | None = None,
    ) -> Page[MessageRecord]:
        """One page of messages in ``seq`` order, optionally after a ``seq`` and of one role."""
        params = query(after_seq=after_seq, role=role, page_size=page_size, cursor=cursor)
        return self._call(_messages(user_id, session_id, params))

    def message_iter(
        self,
        user_id: str,
        session_id: str,
        *,
        after_seq: int | None = None,
        role: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[MessageRecord]:
        params = query(after_seq=after_seq, role=role, page_size=page_size)
        return self._iterate(_messages(user_id, session_id, params))

    def message_recent(
        self, user_id: str, session_id: str, count: int, *, role: str | None = None
    ) -> list[MessageRecord]:
        """The last ``count`` messages (of ``role``, if given), in ``seq`` order."""
        return self._call(
            Call(
                "GET", session_url(user_id, session_id, "messages"), _recent_page, params=query(recent=count, role=role)
            )
        )

    def message_search(
        self, user_id: str, q: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[MessageHit]:
        """One page of the user's messages (every session) whose content matches ``q``, best first:
        words must all appear, "quoted phrases" in order, ``or`` between alternatives, ``-word`` excluded."""
        return self._call(_search(user_id, MessageHit, q, limit, cursor))

    def message_search_iter(self, user_id: str, q: str, *, limit: int | None = None) -> Iterator[MessageHit]:
        """Every match of ``message_search``, page after page (``limit`` per page)."""
        return self._iterate(_search(user_id, MessageHit, q, limit, None))

    def message_pop(
        self, user_id: str, session_id: str, *, idempotency_key: str | None = None, expected_last_seq: int | None = None
    ) -> MessageRecord | None:
        """Remove and return the newest message (None when the history is empty).

        Every pop carries an idempotency key (a new UUID unless given), so it is retried on
        connection errors: the server answers a retry with the first answer and pops nothing twice.
        ``expected_last_seq``: the newest seq you saw; if it is no longer the newest, PreconditionFailed."""
        payload = _given(idempotency_key=idempotency_key or str(uuid.uuid4()), expected_last_seq=expected_last_seq)
        return self._call(
            Call("POST", session_url(user_id, session_id, "messages", "pop"), _popped, json=payload, idempotent=True)
        )

    def message_rewind(
        self,
        user_id: str,
        session_id: str,
        after_seq: int,
        *,
        after_round: int | None = None,
        expected_last_seq: int | None = None,
    ) -> HistoryEdit:
        """Remove every message after ``after_seq`` (and, with ``after_round``, every round after it).
        Give ``expected_last_seq`` so a rewind never removes an append you did not see."""
        payload = _given(after_seq=after_seq, after_round=after_round, expected_last_seq=expected_last_seq)
        return self._call(
            Call("POST", session_url(user_id, session_id, "messages", "rewind"), as_model(HistoryEdit), json=payload)
        )

    def message_clear(self, user_id: str, session_id: str, *, expected_last_seq: int | None = None) -> HistoryEdit:
        """Remove every message, keeping the session (its rounds, checkpoints and counters)."""
        return self._call(
            Call(
                "POST",
                session_url(user_id, session_id, "messages", "clear"),
                as_model(HistoryEdit),
                json=_given(expected_last_seq=expected_last_seq),
            )
        )

    def session_fork(
        self,
        user_id: str,
        session_id: str,
        new_session_id: str | None = None,
        *,
        up_to_seq: int | None = None,
        up_to_round: int | None = None,
        expected_last_seq: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionRecord:
        """Copy the session's messages up to ``up_to_seq`` and rounds up to ``up_to_round`` (default:
        all) into a new session of the same user (blank ``new_session_id``: a UUID) with the parent's
        agent, workspace and metadata (or ``metadata``); its ``forked_from`` names the parent. An
        existing ``new_session_id`` raises Conflict."""
        payload = _given(
            new_session_id=new_session_id,
            up_to_seq=up_to_seq,
            up_to_round=up_to_round,
            expected_last_seq=expected_last_seq,
            metadata=metadata,
        )
        return self._call(Call("POST", session_url(user_id, session_id, "fork"), as_model(SessionRecord), json=payload))

    # --- rounds ---------------------------------------------------------------------------------
    def round_save(
        self,
        user_id: str,
        session_id: str,
        state: dict[str, Any],
        *,
        round_id: int | None = None,
        expected_version: int | None = None,
    ) -> Round:
        """Save a state snapshot, creating the session if missing: as round ``max + 1`` (or 1), or
        overwriting ``round_id`` (then safe to retry, and ``expected_version`` guards it)."""
        payload = _given(state=state, round_id=round_id)
        return self._call(
            Call(
                "POST",
                session_url(user_id, session_id, "rounds"),
                as_model(Round),
                json=payload,
                headers=if_match(expected_version),
                idempotent=round_id is not None,
            )
        )

    def round_put(
        self,
        user_id: str,
        session_id: str,
        round_id: int,
        state: dict[str, Any],
        *,
        expected_version: int | None = None,
    ) -> Round:
        """Write round ``round_id``; a stale ``expected_version`` raises PreconditionFailed."""
        return self._call(
            Call(
                "PUT",
                session_url(user_id, session_id, "rounds", _round(round_id)),
                as_model(Round),
                json={"state": state},
                headers=if_match(expected_version),
            )
        )

    def round_get(self, user_id: str, session_id: str, round_id: int) -> Round:
        return self._call(Call("GET", session_url(user_id, session_id, "rounds", _round(round_id)), as_model(Round)))

    def round_latest(self, user_id: str, session_id: str) -> Round:
        """The round with the largest ``round_id`` (not the last written); NotFound when there is none."""
        return self._call(Call("GET", session_url(user_id, session_id, "rounds", "latest"), as_model(Round)))

    def round_list(
        self, user_id: str, session_id: str, *, page_size: int | None = None, cursor: str | None = None
    ) -> Page[Round]:
        """One page of rounds in ``round_id`` order, without their state."""
        return self._call(_listing(session_url(user_id, session_id, "rounds"), Round, page_size, cursor))

    def round_iter(self, user_id: str, session_id: str, *, page_size: int | None = None) -> Iterator[Round]:
        return self._iterate(_listing(session_url(user_id, session_id, "rounds"), Round, page_size))

    def round_delete(self, user_id: str, session_id: str, round_id: int) -> None:
        return self._call(Call("DELETE", session_url(user_id, session_id, "rounds", _round(round_id)), as_nothing))

    # --- checkpoints ----------------------------------------------------------------------------
    def checkpoint_create(
        self,
        user_id: str,
        session_id: str,
        label: str,
        *,
        include_keys: Sequence[str] | None = None,
        state: dict[str, Any] | None = None,
    ) -> Checkpoint:
        """Snapshot the working state (only ``include_keys`` when given) or the ``state`` given, under ``label``."""
        keys = None if include_keys is None else list(include_keys)
        payload = _given(label=label, include_keys=keys, state=state)
        url = session_url(user_id, session_id, "checkpoints")
        return self._call(Call("POST", url, as_model(Checkpoint), json=payload))

    def checkpoint_latest(self, user_id: str, session_id: str, label: str) -> Checkpoint:
        """The newest checkpoint with ``label``; NotFound when there is none."""
        return self._call(
            Call(
                "GET",
                session_url(user_id, session_id, "checkpoints", "latest"),
                as_model(Checkpoint),
                params=query(label=label),
            )
        )

    def checkpoint_list(
        self, user_id: str, session_id: str, *, page_size: int | None = None, cursor: str | None = None
    ) -> Page[Checkpoint]:
        """One page of checkpoints (id, label, time; no state)."""
        return self._call(_listing(session_url(user_id, session_id, "checkpoints"), Checkpoint, page_size, cursor))

    def checkpoint_iter(self, user_id: str, session_id: str, *, page_size: int | None = None) -> Iterator[Checkpoint]:
        return self._iterate(_listing(session_url(user_id, session_id, "checkpoints"), Checkpoint, page_size))

    # --- working state --------------------------------------------------------------------------
    def working_state_get(self, user_id: str, session_id: str) -> dict[str, Any]:
        """The session's scratch keys ({} once it ended)."""
        return self._call(Call("GET", session_url(user_id, session_id, "working-state"), as_json))

    def working_state_put(self, user_id: str, session_id: str, state: dict[str, Any]) -> dict[str, Any]:
        """Replace the working state with ``state``."""
        return self._call(Call("PUT", session_url(user_id, session_id, "working-state"), as_json, json=state))

    def working_state_patch(self, user_id: str, session_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Merge top-level keys (a None value removes its key); concurrent patches of other keys are kept."""
        return self._call(Call("PATCH", session_url(user_id, session_id, "working-state"), as_json, json=changes))

    def working_state_delete(self, user_id: str, session_id: str) -> None:
        return self._call(Call("DELETE", session_url(user_id, session_id, "working-state"), as_nothing))

    # --- transitions ----------------------------------------------------------------------------
    def transition_record(
        self,
        user_id: str,
        session_id: str,
        to_agent: str,
        *,
        from_agent: str | None = None,
        reason: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Transition:
        """Record a hand-off to ``to_agent``."""
        payload = _given(to_agent=to_agent, from_agent=from_agent, reason=reason, metadata=metadata)
        return self._call(
            Call("POST", session_url(user_id, session_id, "transitions"), as_model(Transition), json=payload)
        )

    def transition_list(
        self, user_id: str, session_id: str, *, page_size: int | None = None, cursor: str | None = None
    ) -> Page[Transition]:
        return self._call(_listing(session_url(user_id, session_id, "transitions"), Transition, page_size, cursor))

    def transition_iter(self, user_id: str, session_id: str, *, page_size: int | None = None) -> Iterator[Transition]:
        return self._iterate(_listing(session_url(user_id, session_id, "transitions"), Transition, page_size))

    # --- usage ----------------------------------------------------------------------------------
    def run_usage_record(
        self,
        user_id: str,
        session_id: str,
        *,
        turn: int | None = None,
        requests: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
        total_tokens: int = 0,
        input_tokens_details: dict[str, Any] | None = None,
        output_tokens_details: dict[str, Any] | None = None,
    ) -> RunUsage:
        """Store one turn's model usage, replacing what the turn had (``turn`` None: the history's
        current turn, i.e. how many user messages it holds; an empty history has none: ValidationError)."""
        payload = _given(
            turn=turn,
            requests=requests,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=total_tokens,
            input_tokens_details=input_tokens_details,
            output_tokens_details=output_tokens_details,
        )
        return self._call(Call("POST", session_url(user_id, session_id, "usage"), as_model(RunUsage), json=payload))

    def run_usage_list(
        self, user_id: str, session_id: str, *, page_size: int | None = None, cursor: str | None = None
    ) -> Page[RunUsage]:
        return self._call(_listing(session_url(user_id, session_id, "usage"), RunUsage, page_size, cursor))

    def run_usage_iter(self, user_id: str, session_id: str, *, page_size: int | None = None) -> Iterator[RunUsage]:
        """The session's usage, a row per turn, in turn order."""
        return self._iterate(_listing(session_url(user_id, session_id, "usage"), RunUsage, page_size))

    # --- user data ------------------------------------------------------------------------------
    def user_data_get(self, user_id: str, key: str) -> UserDatum:
        return self._call(Call("GET", calls.user_data_url(user_id, key), as_model(UserDatum)))

    def user_data_put(self, user_id: str, key: str, value: Any) -> UserDatum:
        """Set ``key`` of the user to ``value`` (any JSON)."""
        return self._call(Call("PUT", calls.user_data_url(user_id, key), as_model(UserDatum), json={"value": value}))

    def user_data_delete(self, user_id: str, key: str) -> None:
        return self._call(Call("DELETE", calls.user_data_url(user_id, key), as_nothing))

    def user_data_list(
        self, user_id: str, *, page_size: int | None = None, cursor: str | None = None
    ) -> Page[UserDatum]:
        """One page of the user's data in key order."""
        return self._call(_listing(calls.user_data_url(user_id), UserDatum, page_size, cursor))

    def user_data_iter(self, user_id: str, *, page_size: int | None = None) -> Iterator[UserDatum]:
        return self._iterate(_listing(calls.user_data_url(user_id), UserDatum, page_size))

    # --- memories (LangGraph's store: agentstate.integrations.langgraph_store) ----------------------
    def memory_search(
        self, user_id: str, q: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[MemoryHit]:
        """One page of the user's memory items whose value's strings hold ANY word of ``q`` (whole,
        any case, no stemming), best first: more of the words, then rarer ones, then the newest."""
        return self._call(_search(user_id, MemoryHit, q, limit, cursor))

    def memory_search_iter(self, user_id: str, q: str, *, limit: int | None = None) -> Iterator[MemoryHit]:
        """Every match of ``memory_search``, page after page (``limit`` per page)."""
        return self._iterate(_search(user_id, MemoryHit, q, limit, None))

    # --- compliance (a key with scope "compliance"; agent keys get PermissionDenied) -------------
    def subject_export(self, user_id: str) -> dict[str, Any]:
        """Everything held about the user in the key's tenant, as one JSON document (GDPR Art. 15/20):
        ``{"generated_at", "subjects": [{"tenant", "user_id", "user_data", "sessions"}]}``, each
        session with its messages, rounds, checkpoints, transitions and working state."""
        return self._call(Call("GET", f"{API}/compliance/users/{calls.segment(user_id)}/export/", as_json))

    # --- service --------------------------------------------------------------------------------
    def key_get(self) -> dict[str, Any]:
        """The calling key: ``{"tenant", "scope", "user_id"}``, ``user_id`` the one person a key
        scoped to a person reaches (None for a tenant key)."""
        return self._call(Call("GET", f"{API}/key/", as_json))

    def health(self) -> dict[str, str]:
        """The server's health report (``{"status": "ok", ...}``, or the failing part when it is 503)."""
        return self._call(Call("GET", "/healthz", as_json, answers=frozenset({503})))


def _given(**fields: Any) -> dict[str, Any]:
    """A request body without the arguments left unset (the server applies its defaults)."""
    return {name: value for name, value in fields.items() if value is not None}


def _round(round_id: int) -> str:
    if isinstance(round_id, bool) or not isinstance(round_id, int):
        raise TypeError(f"round_id is an int, not {type(round_id).__name__}")
    return str(round_id)
