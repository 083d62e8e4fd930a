"""A Google ADK session as staff read it on its admin page: its latest events in order (author,
text, function calls and results, state deltas with their user: part put back) and the merged
state; the user: part only for a login that may read ADK user state (``agentstate.access``).
Project level: the user: state is user data (userdata_app), the rest process state, so the
section is rendered here and handed to the session admin (``SiteConfig.ready``), never loaded as a
template tag by a page of sessions_app."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string

from agentstate import access
from agentstate.admin.display import json_text
from agentstate.validation import timestamp_datetime
from backends.adk.people import selectors as user_selectors
from backends.adk.people.subject_data import CATEGORY as ADK_USER_STATE
from backends.adk.process import selectors
from backends.adk.process.models import AdkEvent
from backends.adk.process.state import USER_PREFIX, json_object, state_merge
from sessions_app.admin.sessions import history_url
from sessions_app.models import Session

LATEST_EVENTS = 50


def _event_row(seq: int, event: dict[str, Any], user_delta: dict[str, Any] | None) -> dict[str, Any]:
    parts = ((event.get("content") or {}).get("parts")) or []
    delta = dict((event.get("actions") or {}).get("state_delta") or {})
    delta.update({USER_PREFIX + key: value for key, value in (user_delta or {}).items()})
    return {
        "seq": seq,
        "author": event.get("author", ""),
        "time": timestamp_datetime(event.get("timestamp")),  # None: stored before timestamps were checked
        "text": "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str)),
        "calls": [
            f"{p['function_call'].get('name')}({json_text(p['function_call'].get('args') or {})})"
            for p in parts
            if p.get("function_call")
        ],
        "results": [
            f"{p['function_response'].get('name')} → {json_text(p['function_response'].get('response'))}"
            for p in parts
            if p.get("function_response")
        ],
        "delta": json_text(delta) if delta else "",
    }


def session_section(session: Session) -> str:
    window = selectors.adk_event_window(session=session, num_recent_events=LATEST_EVENTS)
    # Bounded by bytes like every page (events carry inline files): past the budget the page shows
    # the oldest of the window that fit and says the newer ones are on the events' list.
    page = (
        selectors.adk_event_page(
            session=session, cursor=window, page_size=LATEST_EVENTS, max_bytes=settings.PAGE_MAX_BYTES
        )
        if window
        else None
    )
    events = page.events if page else []
    # The user: state is user data: a login that may not open it (Support) reads the rest only.
    user_shown = access.category_readable(ADK_USER_STATE)
    deltas = (
        user_selectors.adk_event_user_deltas(session_pk=session.pk, first_seq=events[0][0], last_seq=events[-1][0])
        if events and user_shown
        else {}
    )
    app_state = selectors.adk_app_state_get(tenant=session.tenant, app_name=session.app_name)
    user_state = (
        user_selectors.adk_user_state_get(tenant=session.tenant, app_name=session.app_name, user_id=session.user_id)
        if user_shown
        else {}
    )
    return render_to_string(
        "agentstate_site/adk_session.html",
        {
            "events": [_event_row(seq, json.loads(text), deltas.get(seq)) for seq, text in events],
            "total": session.last_seq,
            "cut": page is not None and page.next is not None,
            "all_url": history_url(AdkEvent, session),
            "user_shown": user_shown,
            "state": json_text(state_merge(app=app_state, user=user_state, session=json_object(session.durable_state))),
        },
    )
