"""ADK data of one person under erasure and subject export: scope "everything" removes their ADK
sessions, events and user: state (app state stays, it is about no one); scope "user data" removes
the user: state only, and the events then read back without their user: delta."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from agentstate.tenancy.models import APIKey
from backends.adk.people.models import AdkEventUserDelta, AdkUserState
from backends.adk.process.models import AdkAppState, AdkEvent
from sessions_app.models import Session
from userdata_app.erasure import erasure_execute
from userdata_app.models import ErasureRequest, ErasureSubject
from userdata_app.selectors import subject_export

APP = "weather_app"


@pytest.fixture
def adk_api(db, tenant) -> Client:
    _, key = APIKey.objects.create_key(name="adk-subjects", tenant=tenant, scope="agent")
    return Client(headers={"X-Api-Key": key})


def _event(seq: int, delta: dict) -> str:
    return json.dumps(
        {
            "id": f"e{seq}",
            "author": "user",
            "timestamp": 1000.0 + seq,
            "content": {"parts": [{"text": f"hi {seq}"}]},
            "actions": {"state_delta": delta},
        }
    )


def _session_with_events(api: Client, user_id: str) -> None:
    base = f"/api/v1/adk/apps/{APP}/users/{user_id}/sessions/"
    assert (
        api.post(
            base, {"session_id": "s1", "state": json.dumps({"user:plan": "pro"})}, content_type="application/json"
        ).status_code
        == 201
    )
    for seq, delta in enumerate([{"user:city": "Paris", "app:units": "metric", "k": 1}, {"k": 2}], start=1):
        response = api.post(base + "s1/events/", {"event": _event(seq, delta)}, content_type="application/json")
        assert response.status_code == 201, response.content


def _erase(tenant, user_id: str, scope: str) -> dict:
    request = ErasureRequest.objects.create(scope=scope, due_on="2099-01-01")
    ErasureSubject.objects.create(request=request, tenant=tenant, user_id=user_id)
    ErasureRequest.objects.filter(pk=request.pk).update(status=ErasureRequest.Status.VERIFIED)
    return erasure_execute(request=request).counts


@pytest.fixture
def hmac_keys(settings):
    settings.ERASURE_HMAC_KEYS = {"k1": "secret"}
    settings.ERASURE_HMAC_KEY_ID = "k1"


def test_erasure_of_everything_removes_adk_sessions_events_and_user_state_of_that_user_only(adk_api, tenant, hmac_keys):
    _session_with_events(adk_api, "ada")
    _session_with_events(adk_api, "bob")
    export = subject_export(subjects=[(tenant, "ada")])["subjects"][0]
    assert export["adk_user_state"][0]["state"] == {"plan": "pro", "city": "Paris"}
    assert [d["delta"] for d in export["adk_user_state"][0]["event_deltas"]] == [{"city": "Paris"}]
    assert [e["event"]["id"] for e in export["sessions"][0]["adk_events"]] == ["e1", "e2"]
    # A time a person reads (issue 29: the export showed ADK's seconds since 1970).
    assert export["sessions"][0]["adk_events"][0]["event"]["timestamp"] == "1970-01-01T00:16:41+00:00"

    counts = _erase(tenant, "ada", ErasureRequest.Scope.EVERYTHING)
    assert (counts["adk_events"], counts["adk_user_state"], counts["sessions"]) == (2, 2, 1)
    assert not Session.objects.filter(user_id="ada").exists()
    assert not AdkEvent.objects.filter(user_id="ada").exists()
    assert (
        not AdkUserState.objects.filter(user_id="ada").exists()
        and not AdkEventUserDelta.objects.filter(user_id="ada").exists()
    )
    assert AdkEvent.objects.filter(user_id="bob").count() == 2 and AdkUserState.objects.filter(user_id="bob").exists()
    assert json.loads(AdkAppState.objects.get(app_name=APP).state) == {"units": "metric"}  # stays


def test_erasure_of_user_data_keeps_the_events_without_their_user_delta(adk_api, tenant, hmac_keys):
    _session_with_events(adk_api, "ada")
    url = f"/api/v1/adk/apps/{APP}/users/ada/sessions/s1/"
    before = adk_api.get(url).json()
    assert before["events"][0]["actions"]["state_delta"] == {"user:city": "Paris", "app:units": "metric", "k": 1}
    assert before["state"] == {"k": 2, "app:units": "metric", "user:plan": "pro", "user:city": "Paris"}

    assert _erase(tenant, "ada", ErasureRequest.Scope.USER_DATA)["adk_user_state"] == 2
    after = adk_api.get(url).json()
    assert after["events"][0]["actions"]["state_delta"] == {"app:units": "metric", "k": 1}
    assert after["state"] == {"k": 2, "app:units": "metric"}
    assert [e["id"] for e in after["events"]] == ["e1", "e2"]


def test_a_create_for_an_erased_person_is_refused_and_stores_nothing(
    transactional_db, adk_api, tenant, hmac_keys, settings
):
    """The create's insert rides in the erasure check's round trip on PostgreSQL, in autocommit
    (as served) a transaction of its own: a refused one stores nothing, a session id already taken
    is still a conflict, and without an erasure key (no erasure recorded) the insert goes alone."""
    base = f"/api/v1/adk/apps/{APP}/users/{{}}/sessions/"
    _session_with_events(adk_api, "ada")
    _erase(tenant, "ada", ErasureRequest.Scope.EVERYTHING)
    for state in ({}, {"user:plan": "pro", "app:units": "metric"}):
        refused = adk_api.post(
            base.format("ada"), {"session_id": "", "state": json.dumps(state)}, content_type="application/json"
        )
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "subject_erased", refused.content
    assert not Session.objects.filter(user_id="ada").exists()
    assert not AdkUserState.objects.filter(user_id="ada").exists()

    created = adk_api.post(base.format("bob"), {"session_id": "s1", "state": "{}"}, content_type="application/json")
    assert created.status_code == 201 and created.json()["state"] == {"app:units": "metric"}
    again = adk_api.post(base.format("bob"), {"session_id": "s1", "state": "{}"}, content_type="application/json")
    assert again.status_code == 409 and again.json()["error"]["code"] != "subject_erased"

    _session_with_events(adk_api, "cy")
    _erase(tenant, "cy", ErasureRequest.Scope.USER_DATA)  # process state may come back, user: state may not
    kept = adk_api.post(base.format("cy"), {"session_id": "s2", "state": '{"k": 1}'}, content_type="application/json")
    assert kept.status_code == 201
    user_part = adk_api.post(
        base.format("cy"), {"session_id": "s3", "state": '{"user:plan": "pro"}'}, content_type="application/json"
    )
    assert user_part.status_code == 409 and not Session.objects.filter(user_id="cy", session_id="s3").exists()

    settings.ERASURE_HMAC_KEYS = {}
    unchecked = adk_api.post(base.format("dee"), {"session_id": "s1", "state": "{}"}, content_type="application/json")
    assert unchecked.status_code == 201 and Session.objects.filter(user_id="dee").count() == 1


def test_the_user_state_export_reads_event_deltas_a_batch_at_a_time(adk_api, tenant, settings):
    """Each app's event deltas, in append order, are read in batches bounded by bytes as the export
    is written: a person with many events is never held whole."""
    base = f"/api/v1/adk/apps/{APP}/users/ada/sessions/"
    assert adk_api.post(base, {"session_id": "s1"}, content_type="application/json").status_code == 201
    for seq in range(1, 13):
        response = adk_api.post(
            base + "s1/events/", {"event": _event(seq, {"user:n": seq, "k": seq})}, content_type="application/json"
        )
        assert response.status_code == 201, response.content
    settings.PAGE_MAX_BYTES = 40  # a few deltas a batch
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        (app,) = subject_export(subjects=[(tenant, "ada")])["subjects"][0]["adk_user_state"]
    assert (app["app_name"], app["state"]) == (APP, {"n": 12})
    assert [d["delta"] for d in app["event_deltas"]] == [{"n": seq} for seq in range(1, 13)]
    delta_reads = [q["sql"] for q in queries if "adkeventuserdelta" in q["sql"]]
    assert len(delta_reads) > 3  # the apps, the keys and sizes, then a read per batch
