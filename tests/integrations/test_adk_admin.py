"""Staff read an ADK session on its admin page as ADK has it: events in order with author, text,
function calls and results, state deltas (user: part included), and the merged state; app state
per app has its own page."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from agentstate.tenancy.models import APIKey
from backends.adk.people.models import AdkUserState
from backends.adk.process.models import AdkAppState
from sessions_app.models import Session


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("boss"))
    return client


def test_an_adk_session_page_shows_events_in_order_and_merged_state(staff, tenant):
    _, key = APIKey.objects.create_key(name="adk-admin", tenant=tenant, scope="agent")
    api = Client(headers={"X-Api-Key": key})
    base = "/api/v1/adk/apps/weather_app/users/ada/sessions/"
    api.post(base, {"session_id": "s1", "state": json.dumps({"app:units": "metric"})}, content_type="application/json")
    events = [
        {"author": "user", "content": {"parts": [{"text": "Weather in Paris?"}]}},
        {
            "author": "weather_agent",
            "content": {"parts": [{"function_call": {"name": "get_weather", "args": {"city": "Paris"}}}]},
        },
        {
            "author": "weather_agent",
            "content": {"parts": [{"function_response": {"name": "get_weather", "response": {"sky": "sunny"}}}]},
            "actions": {"state_delta": {"user:last_city": "Paris", "lookups": 1}},
        },
        {"author": "weather_agent", "content": {"parts": [{"text": "Sunny in Paris."}]}},
    ]
    for i, event in enumerate(events):
        body = {"id": f"e{i}", "timestamp": 1_700_000_000.0 + i, **event}
        assert (
            api.post(base + "s1/events/", {"event": json.dumps(body)}, content_type="application/json").status_code
            == 201
        )

    session = Session.objects.get(app_name="weather_app", session_id="s1")
    page = staff.get(reverse("admin:sessions_app_session_change", args=[session.pk])).content.decode()
    order = [page.index(text) for text in ("Weather in Paris?", "get_weather(", "get_weather →", "Sunny in Paris.")]
    assert order == sorted(order)
    assert "&quot;city&quot;: &quot;Paris&quot;" in page and "&quot;sky&quot;: &quot;sunny&quot;" in page
    assert "&quot;user:last_city&quot;: &quot;Paris&quot;" in page  # the delta's user: part, from user data
    state = page[page.index('class="json adk-state"') :]
    assert all(f"&quot;{key}&quot;" in state for key in ("app:units", "user:last_city", "lookups"))

    events_page = staff.get(reverse("admin:sessions_app_adkevent_changelist") + f"?session__id__exact={session.pk}")
    assert events_page.status_code == 200 and "Sunny in Paris." in events_page.content.decode()
    app_state = AdkAppState.objects.get(app_name="weather_app")
    assert "metric" in staff.get(reverse("admin:sessions_app_adkappstate_change", args=[app_state.pk])).content.decode()
    assert staff.get(reverse("admin:userdata_app_adkuserstate_changelist") + "?q=ada").status_code == 200


def test_an_adk_session_page_of_large_events_stops_at_the_page_budget(staff, tenant, settings):
    """Fifty events carrying inline files made the session page load them all: past
    ``PAGE_MAX_BYTES`` it shows the ones that fit and sends staff to the events' list."""
    from backends.adk.process import services as adk_services

    adk_services.adk_session_create(tenant=tenant, app_name="app", user_id="ada", session_id="s1", state={})
    for i in range(6):
        text = f"event {i} " + "f" * 20_000
        adk_services.adk_event_append(
            tenant=tenant,
            app_name="app",
            user_id="ada",
            session_id="s1",
            event={
                "id": f"e{i}",
                "author": "agent",
                "timestamp": 1_700_000_000 + i,
                "content": {"parts": [{"text": text}]},
            },
        )
    settings.PAGE_MAX_BYTES = 50_000

    session = Session.objects.get(session_id="s1")
    page = staff.get(reverse("admin:sessions_app_session_change", args=[session.pk])).content.decode()
    assert "event 2 " in page and "event 3 " not in page and len(page) < 200_000
    assert "the newer ones hold more than a page may" in page


def test_adk_user_state_stored_with_a_lone_surrogate_reads_as_its_escape(staff, tenant):
    """State stored before the input rules could hold a lone surrogate: the page shows its escape
    (as every JSON staff read) instead of failing to encode it."""
    row = AdkUserState.objects.create(tenant=tenant, app_name="app", user_id="u1", state='{"city": "\\ud800x"}')
    page = staff.get(reverse("admin:userdata_app_adkuserstate_change", args=[row.pk]))
    assert page.status_code == 200 and "\\ud800x" in page.content.decode()
