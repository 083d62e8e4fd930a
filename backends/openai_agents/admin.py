"""An OpenAI Agents SDK session's items on its admin page, in place of its latest messages, and
its branches named as the SDK names them (discovered as every app's admin module)."""

from __future__ import annotations

from django.template.loader import render_to_string

from agentstate.admin.display import previewed
from backends.openai_agents.process import presenters
from sessions_app.admin.sessions import history_url
from sessions_app.backends import FrameworkSection
from sessions_app.models import Message, Session

LATEST_ITEMS = 30


def items_section(session: Session) -> str:
    newest = previewed(Message.objects.filter(session=session).defer("metadata", "usage").order_by("-seq"), "content")[
        :LATEST_ITEMS
    ]
    return render_to_string(
        "admin/sessions_app/session/openai_items.html",
        {
            "items": presenters.item_rows(list(reversed(newest))),
            "total": session.message_count,
            "history_url": history_url(Message, session),
        },
    )


STAFF_SECTION = FrameworkSection(
    "OpenAI Agents SDK items",
    items_section,
    in_place_of="messages",
    name=presenters.session_name,
    message_preview=presenters.message_preview,
    message_content=presenters.item_of,
)
