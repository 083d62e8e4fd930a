"""A LangGraph thread as staff read it: its checkpoints in step order, a fork indented under the
checkpoint it branched from, each with its state values and its metadata as labelled lines."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from agentstate.admin.display import PREVIEW_CHARS, json_text
from backends.langgraph.process.models import LangGraphCheckpoint

SHOWN_ELSEWHERE = ("source", "step")  # columns of their own


@dataclass(frozen=True)
class TimelineRow:
    checkpoint: LangGraphCheckpoint
    depth: int  # 0 on the thread's first line; each fork one deeper than the line it left
    forked_from: int | None  # on a fork's first checkpoint: the step of the one it branched from
    state: str
    metadata: list[tuple[str, str]]
    metadata_json: str


def _state(checkpoint: Any) -> str:
    """The channel values (previewed), or the serializer's type and size."""
    size = f"{checkpoint.value_type} value, {checkpoint.value_bytes:,} bytes"
    if not checkpoint.state_read:
        return f"{size}: the state is on the checkpoint's page"
    if checkpoint.rendered is None:
        return f"{size} (no JSON view)"
    text = json_text(checkpoint.rendered)
    if len(text) > PREVIEW_CHARS:
        return f"{text[:PREVIEW_CHARS]}… ({len(text):,} characters in all: the whole state is on the checkpoint's page)"
    return text


def _metadata(metadata: Any) -> list[tuple[str, str]]:
    if not isinstance(metadata, dict):
        return []
    return [
        (key.replace("_", " "), value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        for key, value in sorted(metadata.items())
        if key not in SHOWN_ELSEWHERE and value not in ({}, [], None, "")
    ]


def checkpoint_tree(checkpoints: list[Any]) -> list[TimelineRow]:
    """``checkpoints`` (one thread's, from ``selectors.thread_timeline``) as a tree: each line in step
    order, a checkpoint's later children as forks right under it, then its first child going on.
    A checkpoint whose parent is not among them starts a line of its own."""
    ordered = sorted(checkpoints, key=lambda c: (c.checkpoint_ns, c.checkpoint_id))  # ids grow with time
    known = {(c.checkpoint_ns, c.checkpoint_id) for c in ordered}
    children: dict[tuple[str, str], list[Any]] = defaultdict(list)
    roots: list[Any] = []
    for c in ordered:
        parent = (c.checkpoint_ns, c.parent_checkpoint_id)
        (children[parent] if parent in known else roots).append(c)
    rows: list[TimelineRow] = []
    stack: list[tuple[Any, int, int | None]] = [(c, 0, None) for c in reversed(roots)]
    while stack:  # not recursive: a thread's line can be thousands of checkpoints long
        c, depth, forked_from = stack.pop()
        rows.append(TimelineRow(c, depth, forked_from, _state(c), _metadata(c.metadata), json_text(c.metadata)))
        kids = children.get((c.checkpoint_ns, c.checkpoint_id), [])
        if kids:
            stack.append((kids[0], depth, None))
            stack.extend((k, depth + 1, c.step) for k in reversed(kids[1:]))
    return rows
