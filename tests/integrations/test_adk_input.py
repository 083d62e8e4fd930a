"""ADK's endpoints under the rules every endpoint keeps: JSON without NaN, infinity or numbers past
a float's range (in JSON carried as text too), event timestamps a datetime can hold, one event per
id in a session (as ADK's own stores), and values stored before these rules still shown to staff
and exported without a server error."""

from __future__ import annotations

import json
import math

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse

from agentstate.tenancy.services import api_key_create
from backends.adk.process.models import AdkAppState, AdkEvent
from sessions_app.models import Session
from tests.api.assertions import streamed

pytestmark = pytest.mark.django_db
SESSIONS = "/api/v1/adk/apps/app/users/ada/sessions/"


@pytest.fixture
def adk(tenant) -> Client:
    client = Client(headers={"X-Api-Key": api_key_create(tenant=tenant, name="adk", scope="compliance")[1]})
    assert client.post(SESSIONS, {"session_id": "s1"}, content_type="application/json").status_code == 201
    return client


def strict_json(response):
    """The body, read as JSON that has no NaN or infinity (what any other JSON parser accepts)."""
    assert response["Content-Type"].startswith("application/json")
    body = streamed(response) if response.streaming else response.content  # the export is streamed
    return json.loads(body, parse_constant=lambda name: pytest.fail(f"{name} in the answer"))


def append(client: Client, event_text: str, session: str = "s1"):
    return client.post(f"{SESSIONS}{session}/events/", {"event": event_text}, content_type="application/json")


@pytest.mark.parametrize("timestamp", ["1e300", "-1e18", "NaN", "Infinity", "1e400"])
def test_an_event_timestamp_no_datetime_can_hold_is_400_and_the_admin_still_lists_events(adk, timestamp):
    response = append(adk, f'{{"id": "e1", "author": "user", "timestamp": {timestamp}}}')
    assert response.status_code == 400 and strict_json(response)["error"]["fields"], response.content
    assert not AdkEvent.objects.exists()
    assert strict_json(adk.get(SESSIONS + "s1/"))["last_update_time"] > 0


def test_state_with_nan_infinity_or_overflow_is_400_and_every_answer_stays_json(adk):
    state = '{"user:score": NaN, "app:limit": Infinity, "big": 1e400}'
    response = adk.post(SESSIONS, {"session_id": "s2", "state": state}, content_type="application/json")
    assert response.status_code == 400 and "state" in strict_json(response)["error"]["fields"]
    delta = '{"id": "e1", "timestamp": 1.0, "actions": {"state_delta": {"app:limit": -Infinity}}}'
    assert append(adk, delta).status_code == 400
    assert not Session.objects.filter(session_id="s2").exists() and not AdkAppState.objects.exists()
    assert strict_json(adk.get(SESSIONS + "s1/"))["state"] == {}


@pytest.mark.parametrize(
    "where",
    ["state", "app: delta", "user: delta", "event id", "event text"],
)
def test_a_lone_surrogate_in_json_text_is_400_and_the_app_keeps_answering(adk, where):
    """No database stores a lone surrogate and no JSON encoder writes one: taken in, one ``app:``
    value made every session of the app answer 500."""
    lone = "\\ud800"  # the JSON escape, inside the JSON text
    if where == "state":
        response = adk.post(
            SESSIONS, {"session_id": "s2", "state": f'{{"k": "{lone}"}}'}, content_type="application/json"
        )
    else:
        event = {
            "app: delta": f'{{"id": "e1", "timestamp": 1.0, "actions": {{"state_delta": {{"app:k": "{lone}"}}}}}}',
            "user: delta": f'{{"id": "e1", "timestamp": 1.0, "actions": {{"state_delta": {{"user:k": "{lone}"}}}}}}',
            "event id": f'{{"id": "e{lone}", "timestamp": 1.0}}',
            "event text": f'{{"id": "e1", "timestamp": 1.0, "content": {{"parts": [{{"text": "{lone}"}}]}}}}',
        }[where]
        response = append(adk, event)
    assert response.status_code == 400, response.content
    assert "lone surrogate" in json.dumps(strict_json(response)["error"])
    assert not AdkEvent.objects.exists() and not Session.objects.filter(session_id="s2").exists()
    assert adk.post(SESSIONS, {"session_id": "s3"}, content_type="application/json").status_code == 201
    assert strict_json(adk.get(SESSIONS + "s1/"))["state"] == {}
    assert adk.get("/api/v1/adk/apps/app/sessions/").status_code == 200


def test_a_lone_surrogate_stored_before_the_rule_reads_back_as_its_escape(adk, tenant):
    AdkAppState.objects.create(tenant=tenant, app_name="app", state='{"k": "\\ud800"}')
    session = Session.objects.get(session_id="s1")
    AdkEvent.objects.create(
        session=session, tenant=tenant, user_id="ada", seq=1, event_id="e1", timestamp=1.0,
        data='{"id": "e1", "timestamp": 1.0, "content": {"parts": [{"text": "\\udc00"}]}}',
    )  # fmt: skip
    answer = strict_json(adk.get(SESSIONS + "s1/"))
    assert answer["state"] == {"app:k": "\ud800"}
    assert adk.get("/api/v1/adk/apps/app/sessions/").status_code == 200
    exported = streamed(adk.get("/api/v1/compliance/users/ada/export/"))
    assert b"\\udc00" in exported and json.loads(exported)
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("boss"))
    for page in [
        reverse("admin:sessions_app_adkevent_changelist"),
        reverse("admin:sessions_app_adkevent_change", args=[AdkEvent.objects.get().pk]),
        reverse("admin:sessions_app_session_change", args=[session.pk]),
        reverse("admin:sessions_app_adkappstate_changelist"),
        reverse("admin:sessions_app_adkappstate_change", args=[AdkAppState.objects.get().pk]),
    ]:
        assert staff.get(page).status_code == 200, page


def test_the_same_event_id_twice_in_a_session_is_409_and_stored_once(adk):
    assert adk.post(SESSIONS, {"session_id": "s2"}, content_type="application/json").status_code == 201
    event = json.dumps({"id": "e1", "author": "user", "timestamp": 1.0})
    assert append(adk, event).status_code == 201
    again = append(adk, json.dumps({"id": "e1", "author": "model", "timestamp": 2.0}))
    assert again.status_code == 409 and strict_json(again)["error"]["code"] == "event_exists"
    assert append(adk, event, session="s2").status_code == 201  # another session's ids are its own
    assert AdkEvent.objects.filter(event_id="e1").count() == 2
    assert strict_json(adk.get(SESSIONS + "s1/"))["version"] == 2  # the refused append changed nothing


def test_a_path_escape_that_is_not_utf8_is_400_not_a_literal_user_id(adk):
    response = adk.post("/api/v1/adk/apps/app/users/%ED%A0%80/sessions/", {}, content_type="application/json")
    assert response.status_code == 400 and "path" in strict_json(response)["error"]["fields"]
    assert not Session.objects.exclude(user_id="ada").exists()
    literal = "/api/v1/adk/apps/app/users/%25ED%25A0%2580/sessions/"  # the text %ED%A0%80 is an id like any
    assert adk.post(literal, {}, content_type="application/json").status_code == 201


def test_values_stored_before_the_rules_show_in_the_admin_and_the_export(adk, tenant):
    assert adk.post(SESSIONS, {"session_id": "s2"}, content_type="application/json").status_code == 201
    session = Session.objects.get(session_id="s1")
    Session.objects.filter(pk=session.pk).update(last_update_time=math.nan, durable_state='{"x": NaN}')
    AdkAppState.objects.create(tenant=tenant, app_name="app", state='{"limit": Infinity}')
    # SQLite stores NaN as NULL, which the column refuses: there it never got in.
    nan = [math.nan] if connection.vendor == "postgresql" else []
    for seq, timestamp in enumerate([1e300, -1e18, math.inf, *nan], start=1):
        AdkEvent.objects.create(
            session=session,
            tenant=tenant,
            user_id="ada",
            seq=seq,
            event_id=f"e{seq}",
            timestamp=timestamp,
            data=json.dumps({"id": f"e{seq}", "timestamp": timestamp, "score": math.nan}),
        )
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("boss"))
    pages = [
        reverse("admin:sessions_app_adkevent_changelist"),
        reverse("admin:sessions_app_adkevent_change", args=[AdkEvent.objects.get(seq=1).pk]),
        reverse("admin:sessions_app_adkevent_change", args=[AdkEvent.objects.get(seq=3).pk]),
        reverse("admin:sessions_app_session_change", args=[session.pk]),
        reverse("admin:sessions_app_adkappstate_changelist"),
    ]
    for page in pages:
        assert staff.get(page).status_code == 200, page
    # Another session of the app reads as JSON (app: state is in every session's answer).
    assert strict_json(adk.get(SESSIONS + "s2/"))["state"] == {"app:limit": None}
    exported = strict_json(adk.get("/api/v1/compliance/users/ada/export/"))
    assert "e3" in json.dumps(exported)
