"""What bounding a page by bytes costs: the page query alone, in process, plain and counted.

Every history page and every page of an ADK session's events end early once their rows hold
``settings.PAGE_MAX_BYTES`` of JSON; the database counts the bytes in the same query
(``agentstate.api.json_rows.byte_bounded``: a length per row). This times that query against the
same page without the count, on a session of 2,000 messages and one of 2,000 ADK events, through the code the
API runs: ``json_rows`` over ``message_list`` (the history's rows, written by the database) and
``adk_event_page`` (the ADK backend's pages). Nothing here reaches the byte budget: the count is
paid on every page, the early end only on pages of large rows.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from agentstate_site import bulk_data
from benchmarks import report

MESSAGES = 2_000
EVENTS = 2_000
HISTORY_PAGES = (100, 500, 2_000)
EVENT_PAGES = (100, 1_000)
# An ADK event as its backend stores it: the JSON text ADK wrote, about 400 bytes.
EVENT_JSON = (
    '\'{"id":"e\' || i || \'","invocationId":"inv-\' || i || \'","author":"agent","timestamp":\' || i || '
    '\',"content":{"role":"model","parts":[{"text":"' + "An answer of a long conversation. " * 8 + '"}]},'
    '"actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{}}}\''
)


def _prepare():
    """A session of MESSAGES messages and an ADK session of EVENTS events."""
    from django.utils import timezone

    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app.adk.services import adk_session_create
    from sessions_app.models import AdkEvent, Session

    tenant = tenant_get_or_create(slug="bench-pages")
    history = Session.objects.create(tenant=tenant, user_id="agent", session_id="history", agent_id="agent")
    bulk_data.history_fill(session=history, messages=MESSAGES)
    adk = adk_session_create(tenant=tenant, app_name="bench_app", user_id="agent", session_id="events", state={})
    events = adk.session
    bulk_data.insert_series(
        model=AdkEvent,
        count=EVENTS,
        values={
            "session_id": "%s",
            "tenant_id": "%s",
            "user_id": "%s",
            "seq": "i",
            "event_id": "'e' || i",
            "invocation_id": "'inv-' || i",
            "author": "'agent'",
            "timestamp": "i",
            "text": "'An answer of a long conversation.'",
            "data": EVENT_JSON,
            "created_at": "%s",
        },
        params=[events.pk, tenant.pk, "agent", timezone.now()],
    )
    Session.objects.filter(pk=events.pk).update(last_seq=EVENTS)
    bulk_data.analyze()
    return Session.objects.get(pk=history.pk), Session.objects.get(pk=events.pk)


def _history_page(session, rows: int, budget: int | None) -> list:
    from agentstate.api import json_rows
    from sessions_app import selectors
    from sessions_app.api.serializers import MessageSerializer

    page = json_rows.json_rows(selectors.message_list(session=session), MessageSerializer, "seq")
    if budget is not None:
        page = json_rows.byte_bounded(page, json_rows.ByteBudget(budget))
    fetched = list(page[: rows + 1])
    assert len(fetched) == min(rows + 1, MESSAGES)
    return fetched


def _event_page(session, rows: int, budget: int | None) -> list:
    from sessions_app.adk import selectors

    start = selectors.EventCursor(timestamp=float("-inf"), seq=0, last_seq=session.last_seq)
    page = selectors.adk_event_page(session=session, cursor=start, page_size=rows, max_bytes=budget)
    assert len(page.events) == rows
    return page.events


def run(*, quick: bool = False) -> dict[str, Any]:
    from django.conf import settings

    n = 10 if quick else 50
    history, events = _prepare()
    points: dict[str, Any] = {}
    for name, read, session, sizes in (
        ("history page (messages)", _history_page, history, HISTORY_PAGES),
        ("ADK event page", _event_page, events, EVENT_PAGES),
    ):
        points[name] = {
            str(rows): {
                "plain": report.timed(partial(read, session, rows, None), n),
                "counted": report.timed(partial(read, session, rows, settings.PAGE_MAX_BYTES), n),
            }
            for rows in sizes
        }
    return {"samples": n, "page_max_bytes": settings.PAGE_MAX_BYTES, "pages": points}


def print_table(result: dict[str, Any]) -> None:
    rows = [
        [
            f"{name}, {int(size):,} rows",
            f"{point['plain']['median_ms']:.2f}",
            f"{point['counted']['median_ms']:.2f}",
            f"{point['counted']['median_ms'] - point['plain']['median_ms']:+.2f}",
        ]
        for name, sizes in result["pages"].items()
        for size, point in sizes.items()
    ]
    print(report.table(["page query (median ms)", "plain", "counted", "the count"], rows))
