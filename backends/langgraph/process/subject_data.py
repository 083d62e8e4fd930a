"""LangGraph's rows in the map of people's data: a thread, its checkpoints, their channel values
and pending writes hang off the thread's session and go with it; the export nests them under
``langgraph``, each checkpoint with its whole state (the values it keeps and those it names)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.db.models.functions import Length

from agentstate.subject_data import Portable, SubjectData
from backends.langgraph.process.models import LangGraphBlob, LangGraphCheckpoint, LangGraphThread, LangGraphWrite
from backends.langgraph.process.selectors import checkpoint_blobs, checkpoint_blobs_size
from backends.langgraph.process.services import FRAMEWORK
from sessions_app.selectors import iso
from sessions_app.subject_data import SessionPart, process_state


def _stored_value(rows: QuerySet[Any]) -> QuerySet[Any]:
    """The serializer's bytes are not exported: their JSON view is, rendered from them, and their size."""
    return rows.annotate(value_bytes=Length("value"))


def _checkpoint(c: LangGraphCheckpoint) -> dict[str, Any]:
    """A checkpoint with its JSON view (its batch's values read by ``checkpoint_blobs``), or the
    serializer's type and size where there is none."""
    return {
        "checkpoint_ns": c.checkpoint_ns,
        "checkpoint_id": c.checkpoint_id,
        "parent_checkpoint_id": c.parent_checkpoint_id,
        "metadata": c.metadata,
        "channel_versions": c.channel_versions,
        "channel_values": c.rendered,
        "value_type": c.value_type,
        "value_bytes": c.value_bytes,  # type: ignore[attr-defined]  # annotated: the value is not read
        "created_at": iso(c.created_at),
    }


def _write(w: LangGraphWrite) -> dict[str, Any]:
    return {
        "checkpoint_ns": w.checkpoint_ns,
        "checkpoint_id": w.checkpoint_id,
        "task_id": w.task_id,
        "task_path": w.task_path,
        "idx": w.idx,
        "channel": w.channel,
        "value": w.rendered,
        "value_type": w.value_type,
        "value_bytes": w.value_bytes,  # type: ignore[attr-defined]
        "created_at": iso(w.created_at),
    }


def _blob(b: LangGraphBlob) -> dict[str, Any]:
    return {
        "checkpoint_ns": b.checkpoint_ns,
        "channel": b.channel,
        "version": b.version,
        "value": b.rendered,
        "value_type": b.value_type,
        "value_bytes": b.value_bytes,  # type: ignore[attr-defined]
        "created_at": iso(b.created_at),
    }


def declarations() -> tuple[SubjectData, ...]:
    """LangGraph's rows in the map of people's data, registered with the backend (``backends.langgraph.apps``)."""
    return (
        process_state(
            LangGraphThread,
            "langgraph_threads",
            SessionPart("thread_id", lambda t: t.thread_id, order=(), large=("thread_id",), group=FRAMEWORK, one=True),
            label="LangGraph threads",
            retention="the thread's id: lives as long as its session",
            portable=Portable("langgraph_thread", order=("pk",)),
        ),
        process_state(
            LangGraphCheckpoint,
            "langgraph_checkpoints",
            SessionPart(
                "checkpoints",
                _checkpoint,
                order=("checkpoint_ns", "checkpoint_id"),
                large=("value", "metadata", "channel_versions"),
                rows=_stored_value,
                group=FRAMEWORK,
                batch=checkpoint_blobs,
                named_size=checkpoint_blobs_size,
            ),
            label="LangGraph checkpoints",
            retention="keep_latest_checkpoints",
            portable=Portable("langgraph_checkpoint", order=("checkpoint_ns", "checkpoint_id")),
        ),
        process_state(
            LangGraphWrite,
            "langgraph_writes",
            SessionPart(
                "writes",
                _write,
                order=("checkpoint_id", "task_id", "idx"),
                large=("value",),
                rows=_stored_value,
                group=FRAMEWORK,
            ),
            label="LangGraph writes",
            retention="keep_latest_checkpoints",  # a checkpoint's pending writes go with it
            portable=Portable("langgraph_write", order=("checkpoint_ns", "checkpoint_id", "task_id", "idx")),
        ),
        process_state(
            LangGraphBlob,
            "langgraph_channel_values",
            SessionPart(
                "channel_values",
                _blob,
                order=("checkpoint_ns", "channel", "version"),
                large=("value",),
                rows=_stored_value,
                group=FRAMEWORK,
            ),
            label="LangGraph channel values",
            retention="keep_latest_checkpoints",  # a value goes once no kept checkpoint names it
            portable=Portable("langgraph_channel_value", order=("checkpoint_ns", "channel", "version")),
        ),
    )
