"""An OpenAI Agents SDK session as staff read it: each item (a message, a tool call, a tool's
result, reasoning...) as its text, the raw JSON one click away; a branch by its name.

The adapter stores each item as its JSON text in a message's ``content`` and names the SDK session
and the branch in ``metadata.openai_agents``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentstate.admin.display import PREVIEW_CHARS, json_text
from sessions_app.models import Session

FRAMEWORK = "openai_agents"
# agentstate.integrations.openai_agents.FRAMEWORK_KEY (the client imports no Django, this no SDK).
METADATA_KEY = "openai_agents"
MAIN = "main"


def marker(session: Session) -> dict[str, Any]:
    metadata = session.metadata if isinstance(session.metadata, dict) else {}
    value = metadata.get(METADATA_KEY)
    return value if isinstance(value, dict) else {}


def session_name(session: Session) -> str:
    """``<SDK session id>, branch <name>``: what the SDK calls it (a branch's session id is a hash)."""
    mark = marker(session)
    sdk_id = mark.get("session_id") or session.session_id
    return f"{sdk_id}, branch {mark.get('branch') or MAIN}"


@dataclass(frozen=True)
class ItemRow:
    seq: int
    kind: str  # "user", "assistant", "tool call", "tool result", "reasoning", or the item's type
    text: str
    raw: str  # the item as indented JSON (or as stored, when too long to show whole)
    created_at: datetime


def _parts_text(content: Any) -> str:
    """A message item's text: the string, or its text parts (input_text, output_text, refusal)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            p.get("text") if isinstance(p.get("text"), str) else p.get("refusal") or f"[{p.get('type', 'part')}]"
            for p in content
            if isinstance(p, dict)
        ]
        return "\n".join(str(t) for t in texts)
    return json_text(content)


def _arguments(arguments: Any) -> str:
    """A tool call's arguments (JSON text in the item) on one line."""
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return str(arguments)
    return json.dumps(value, ensure_ascii=False)


def item_kind_text(item: Any, tool_names: dict[str, str]) -> tuple[str, str]:
    """(kind, text) of one item; ``tool_names`` maps the call ids seen so far to their tools."""
    if not isinstance(item, dict):
        return "item", json_text(item)
    kind = item.get("type") or "message"
    if kind == "message" or (kind != "function_call_output" and "role" in item and "content" in item):
        return str(item.get("role") or "message"), _parts_text(item.get("content"))
    if kind == "function_call":
        tool_names[str(item.get("call_id"))] = str(item.get("name"))
        return "tool call", f"{item.get('name')}({_arguments(item.get('arguments'))})"
    if kind == "function_call_output":
        name = tool_names.get(str(item.get("call_id")), "tool")
        output = item.get("output")
        return "tool result", f"{name} → {output if isinstance(output, str) else _parts_text(output)}"
    if kind == "reasoning":
        summary = item.get("summary") or []
        return "reasoning", "\n".join(p.get("text", "") for p in summary if isinstance(p, dict))
    return kind.replace("_", " "), ""


def item_of(content: Any) -> Any:
    """The item a message's content holds (its JSON text), or the content as stored."""
    try:
        return json.loads(content) if isinstance(content, str) else content
    except ValueError:
        return content


def message_preview(message: Any) -> str:
    """A message list row: ``kind: text`` of its item (``previewed`` content)."""
    row = item_rows([message])[0]
    return f"{row.kind}: {row.text}" if row.text else row.raw


def item_rows(messages: list[Any]) -> list[ItemRow]:
    """``messages`` (``previewed`` on content, oldest first) as rows; an item too long to preview
    shows as stored, cut, with its length."""
    tool_names: dict[str, str] = {}
    rows = []
    for m in messages:
        start, length = m.content_start, m.content_length
        if start is None or length is None or length > PREVIEW_CHARS:
            shown = f"{start}… ({length:,} characters in all: the whole item is on its own page)" if start else ""
            rows.append(ItemRow(m.seq, m.type or "item", "", shown, m.created_at))
            continue
        item = item_of(json.loads(start))  # the content column: the item's JSON text, as a JSON string
        kind, text = item_kind_text(item, tool_names)
        rows.append(ItemRow(m.seq, kind, text, json_text(item), m.created_at))
    return rows
