"""Process state in the map of people's data (``agentstate.subject_data``): a session belongs to
its ``(tenant, user_id)``, and every row that hangs off a session is the session's person's.

The subject export writes each session as one document; every declaration that hangs off a
session says, with its ``SessionPart``, where in that document its rows go and how each reads.
A framework backend declares its own rows the same way, in its one registration
(``sessions_app.backends.FrameworkBackend.subject_data``), and the export, erasure and counts take
them without naming it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import Expression, QuerySet
from django.db.models.functions import Coalesce

from agentstate import streaming
from agentstate.subject_data import Export, ExportedWith, Portable, SubjectData, declared, register
from agentstate.subjects import PROCESS_STATE
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_optional_label
from sessions_app import working_state
from sessions_app.models import (
    AgentTransition,
    Checkpoint,
    Message,
    MessagePop,
    Round,
    RunUsage,
    Session,
    WorkingStateEntry,
)
from sessions_app.selectors.export import iso, message_as_dict, run_usage_as_dict
from sessions_app.selectors.search import MESSAGE_INDEX
from sessions_app.selectors.sessions import working_state_get
from sessions_app.services.live import working_state_clear_on_commit
from sessions_app.services.retention import AgesWithMessages

SESSIONS = "sessions"  # the sessions' category, and their key in the subject export


@dataclass(frozen=True)
class SessionPart:
    """Where a session's rows of one model go in its export document, and how each row reads.

    ``rows`` narrows or shapes the queryset (ordered by session first, then ``order``); ``large``
    names the columns that bound a batch's bytes (at least one). ``group`` nests the part under that key, present
    only in sessions kept by the framework of that name. ``one``: the part is a single row's value
    (None without one). ``of_session`` replaces the rows: the value is read per session.
    ``batch`` reads for a batch of rows what they name elsewhere (``row`` then shows it), in a few
    queries whatever the batch's rows; ``named_size`` counts those bytes in the batch's bound."""

    key: str
    row: Callable[[Any], Any] = lambda row: row
    order: tuple[str, ...] = ("id",)
    large: tuple[str, ...] = ()
    rows: Callable[[QuerySet], QuerySet] = lambda rows: rows
    group: str = ""
    one: bool = False
    of_session: Callable[[Session], Any] | None = None
    batch: Callable[[list[Any]], None] | None = None
    named_size: Callable[[], Expression] | None = None

    def size(self, model: type[models.Model]) -> Expression:
        """About the bytes a row of ``model`` brings into a batch of the export."""
        stored = streaming.stored_size(model, *self.large)
        return stored if self.named_size is None else stored + self.named_size()


def process_state(model, category: str, part: SessionPart, **options: Any) -> SubjectData:
    """The declaration of rows that hang off a session."""
    return SubjectData(
        model=model,
        category=category,
        kind=PROCESS_STATE,
        via="session",
        export=ExportedWith(SESSIONS),
        part=part,
        **options,
    )


def _working_state_erase(session_pks: list[int]) -> int:
    """Count the sessions' working state now; clear it once the erasure commits (a rollback keeps it).
    A store that cannot count them (Redis down) stops the erasure before anything is erased."""
    try:
        count = working_state.get_store().count_many(session_pks)
    except Exception as exc:
        raise working_state.WorkingStateUnavailable(type(exc).__name__) from exc
    working_state_clear_on_commit(session_pks)
    return count


def _working_state_read(session: Session) -> list[dict[str, Any]]:
    state = working_state_get(session=session)
    return [{"state": state}] if state else []


def _working_state_write(session: Session, record: dict[str, Any]) -> None:
    working_state.get_store().replace(session.pk, record["state"])


def declare() -> None:
    """Register the core's process state (called from ``SessionsAppConfig.ready``)."""
    register(
        SubjectData(
            model=Session,
            category=SESSIONS,
            kind=PROCESS_STATE,
            existed="created_at",
            retention="delete_ended_after_days",  # and end_idle_after_days ends it
            export=Export(SESSIONS, lambda *, tenant, user_id: subject_sessions_export(tenant=tenant, user_id=user_id)),
            # Created first, then forked: a fork's parent comes before it.
            portable=Portable(
                "session",
                order=("created_at", "user_id", "app_name", "session_id"),
                key=("user_id", "app_name", "session_id"),
                checks={
                    "session_id": clean_identifier,
                    "agent_id": clean_optional_label,
                    "workspace_id": clean_optional_label,
                },
            ),
        ),
        process_state(
            Message,
            "messages",
            SessionPart("messages", message_as_dict, order=("seq",), large=("content", "metadata", "usage")),
            retention=AgesWithMessages(counted_by="message_count"),
            text_index=MESSAGE_INDEX,
            portable=Portable(
                "message",
                order=("seq",),
                checks=dict.fromkeys(("role", "type", "status", "name"), clean_optional_label),
            ),
        ),
        # A pop keeps a copy of what it removed for its retries (services/history.py): that is theirs too.
        process_state(
            MessagePop,
            "message_pops",
            SessionPart(
                "popped_messages",
                lambda p: p.message,
                large=("message",),
                rows=lambda rows: rows.filter(message__isnull=False),
            ),
            label="kept popped messages",
            # A copy goes with the messages of its age; one kept before that column, or of a pop
            # that found nothing, ages from the pop's own time. Not history: nobody reads it there.
            retention=AgesWithMessages(age=Coalesce("message_created_at", "created_at"), in_history=False),
            portable=Portable("message_pop", order=("key",)),
        ),
        process_state(
            Round,
            "rounds",
            SessionPart(
                "rounds",
                lambda r: {
                    "round_id": r.round_id,
                    "state": r.state,
                    "created_at": iso(r.created_at),
                    "updated_at": iso(r.updated_at),
                },
                order=("round_id",),
                large=("state",),
            ),
            retention="keep_latest_rounds",
            portable=Portable("round", order=("round_id",)),
        ),
        process_state(
            Checkpoint,
            "checkpoints",
            SessionPart(
                "checkpoints",
                lambda c: {"id": c.pk, "label": c.label, "state": c.state, "created_at": iso(c.created_at)},
                large=("state",),
            ),
            retention="labelled state an agent chose to keep: lives as long as its session",
            portable=Portable("checkpoint", checks={"label": clean_identifier}),
        ),
        process_state(
            AgentTransition,
            "transitions",
            SessionPart(
                "transitions",
                lambda t: {
                    "from_agent": t.from_agent,
                    "to_agent": t.to_agent,
                    "reason": t.reason,
                    "metadata": t.metadata,
                    "created_at": iso(t.created_at),
                },
                large=("metadata",),
            ),
            retention="hand-offs between agents: live as long as their session",
            portable=Portable("transition", checks={"from_agent": clean_optional_label, "to_agent": clean_identifier}),
        ),
        # Token counts of a person's turns: no content, but what one person used (billing, abuse)
        # is theirs, so it is erased and exported with their sessions.
        process_state(
            RunUsage,
            "run_usage",
            SessionPart(
                "run_usage",
                run_usage_as_dict,
                order=("turn",),
                large=("input_tokens_details", "output_tokens_details"),
            ),
            label="model usage per turn",
            retention="token counts of the turns kept: go with their turn or session",
            portable=Portable("run_usage", order=("turn",)),
        ),
        process_state(
            WorkingStateEntry,
            "working_state",
            SessionPart("working_state", of_session=lambda s: working_state_get(session=s)),
            count_roots=lambda session_pks: working_state.get_store().count_many(session_pks),
            erase_roots=_working_state_erase,
            retention="discarded when its session ends, the idle rule's end included",
            # Kept by the store (the database or Redis), not read from the table: a live session's
            # state, without its expiry (a new TTL starts when it is written back).
            portable=Portable("working_state", read=_working_state_read, write=_working_state_write),
        ),
    )


def subject_sessions_export(*, tenant: Tenant, user_id: str) -> Iterator[dict[str, Any]]:
    """Every session of the subject (forks included) as a JSON-ready document with every declared
    part (``SessionPart``), as JSON-ready dicts (subject access, GDPR Art. 15/20). Lazy: a session
    at a time, each part an iterator read in batches bounded by bytes (``agentstate.streaming``),
    so an export of any size holds about one batch. Queries: two per part and batch (and those of
    the part's ``batch``), whatever the number of sessions and rows."""
    sessions = list(Session.objects.filter(tenant=tenant, user_id=user_id).order_by("created_at", "id"))
    rank = {s.pk: index for index, s in enumerate(sessions)}.__getitem__
    session_pks = [s.pk for s in sessions]
    parts = [(d.model, d.part) for d in declared(PROCESS_STATE) if d.via]
    readers = {
        (part.group, part.key): _SessionRows(
            streaming.rows_in_batches(
                part.rows(model._default_manager.filter(session_id__in=session_pks)).order_by(
                    "session_id", *part.order
                ),
                size=part.size(model),
                rank=rank,
                prepare=part.batch,
            ),
            rank=rank,
        )
        for model, part in parts
        if part.of_session is None
    }
    for s in sessions:
        document: dict[str, Any] = {
            "session_id": s.session_id,
            "app_name": s.app_name,
            "framework": s.framework,
            "forked_from_session_id": s.forked_from_session_id,
            "durable_state": json.loads(s.durable_state) if s.durable_state else None,
            "agent_id": s.agent_id,
            "workspace_id": s.workspace_id,
            "metadata": s.metadata,
            "created_at": iso(s.created_at),
            "updated_at": iso(s.updated_at),
            "ended_at": iso(s.ended_at),
        }
        for _, part in parts:
            if part.group and part.group != s.framework:
                continue
            if part.of_session is not None:
                value: Any = part.of_session(s)
            elif part.one:
                value = next(map(part.row, readers[part.group, part.key].of(s.pk)), None)
            else:
                value = map(part.row, readers[part.group, part.key].of(s.pk))
            (document.setdefault(part.group, {}) if part.group else document)[part.key] = value
        yield document


class _SessionRows:
    """Rows ordered by their session's rank, handed out a session at a time (``of``), in that order."""

    def __init__(self, rows: Iterator[Any], *, rank: Callable[[int], int]) -> None:
        self._rows = rows
        self._rank = rank
        self._next: Any = None
        self._started = False

    def of(self, session_pk: int) -> Iterator[Any]:
        if not self._started:  # the first query runs when the first session is written, not before
            self._next, self._started = next(self._rows, None), True
        wanted = self._rank(session_pk)
        while self._next is not None and self._rank(self._next.session_id) <= wanted:
            row, self._next = self._next, next(self._rows, None)
            if self._rank(row.session_id) == wanted:  # an earlier session's rows nobody read are skipped
                yield row
