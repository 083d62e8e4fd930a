"""Checkpoints, working state, transitions and user data over HTTP."""

import pytest

from sessions_app import services
from sessions_app.models import AgentTransition, Checkpoint
from userdata_app.models import UserDatum
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db
S = "/api/v1/users/u1/sessions/s1/"
D = "/api/v1/users/u1/data/"


@pytest.fixture
def session(tenant):
    return services.session_create(tenant=tenant, user_id="u1", session_id="s1")


# --- checkpoints ------------------------------------------------------------------------------


def test_checkpoint_from_working_state_with_include_keys(api, session):
    api.put(S + "working-state/", {"task": "t", "tmp": 1}, format="json")
    response = api.post(S + "checkpoints/", {"label": "cp", "include_keys": ["task", "missing"]}, format="json")
    assert response.status_code == 201
    assert response.json()["state"] == {"task": "t"} and set(response.json()) == {"id", "label", "state", "created_at"}


def test_checkpoint_with_given_state_latest_and_list(api, session):
    api.post(S + "checkpoints/", {"label": "cp", "state": {"v": 1}}, format="json")
    api.post(S + "checkpoints/", {"label": "other", "state": {}}, format="json")
    api.post(S + "checkpoints/", {"label": "cp", "state": {"v": 2}}, format="json")
    assert api.get(S + "checkpoints/latest/", {"label": "cp"}).json()["state"] == {"v": 2}
    listed = api.get(S + "checkpoints/").json()["results"]
    assert [c["label"] for c in listed] == ["cp", "other", "cp"] and "state" not in listed[0]
    assert_error(api.get(S + "checkpoints/latest/", {"label": "none"}), 404, "not_found")
    assert_error(api.get(S + "checkpoints/latest/"), 400, "invalid", field="label")


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "label"),
        ({"label": "a/b"}, "label"),
        ({"label": "cp", "state": [1]}, "state"),
        ({"label": "cp", "state": {}, "include_keys": ["a"]}, "include_keys"),
        ({"label": "cp", "include_keys": "a"}, "include_keys"),
    ],
)
def test_checkpoint_validation(api, session, body, field):
    assert_error(api.post(S + "checkpoints/", body, format="json"), 400, "invalid", field=field)
    assert not Checkpoint.objects.exists()


# --- working state ----------------------------------------------------------------------------


def test_working_state_put_patch_get_delete(api, session):
    assert api.get(S + "working-state/").json() == {}
    assert api.put(S + "working-state/", {"a": 1, "b": 2}, format="json").json() == {"a": 1, "b": 2}
    assert api.patch(S + "working-state/", {"b": None, "c": 3}, format="json").json() == {"a": 1, "c": 3}
    assert api.get(S + "working-state/").json() == {"a": 1, "c": 3}
    assert api.delete(S + "working-state/").status_code == 204
    assert api.get(S + "working-state/").json() == {}


def test_working_state_of_an_ended_session(api, session):
    api.put(S + "working-state/", {"a": 1}, format="json")
    api.post(S + "end/")
    assert api.get(S + "working-state/").json() == {}
    assert_error(api.patch(S + "working-state/", {"a": 2}, format="json"), 409, "session_ended")
    assert_error(api.put(S + "working-state/", {"a": 2}, format="json"), 409, "session_ended")


@pytest.mark.parametrize("body", [[1, 2], "text", {"a/b": 1}, {"k": "nul\x00"}])
def test_working_state_validation(api, session, body):
    assert_error(api.put(S + "working-state/", body, format="json"), 400, "invalid", field="working_state")
    assert_error(api.patch(S + "working-state/", body, format="json"), 400, "invalid", field="working_state")


# --- transitions ------------------------------------------------------------------------------


def test_transitions_record_and_list(api, session):
    response = api.post(
        S + "transitions/",
        {"to_agent": "b", "from_agent": "a", "reason": "handoff", "metadata": {"x": 1}},
        format="json",
    )
    assert response.status_code == 201
    assert set(response.json()) == {"id", "from_agent", "to_agent", "reason", "metadata", "created_at"}
    api.post(S + "transitions/", {"to_agent": "c"}, format="json")
    assert [t["to_agent"] for t in api.get(S + "transitions/").json()["results"]] == ["b", "c"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "to_agent"),
        ({"to_agent": ""}, "to_agent"),
        ({"to_agent": "b", "reason": ["x"]}, "reason"),
        ({"to_agent": "b", "metadata": 1}, "metadata"),
    ],
)
def test_transition_validation(api, session, body, field):
    assert_error(api.post(S + "transitions/", body, format="json"), 400, "invalid", field=field)
    assert not AgentTransition.objects.exists()


def test_transition_on_ended_session_is_409(api, session):
    api.post(S + "end/")
    assert_error(api.post(S + "transitions/", {"to_agent": "b"}, format="json"), 409, "session_ended")


# --- user data --------------------------------------------------------------------------------


def test_user_data_set_get_list_delete(api, tenant):
    assert api.put(D + "email/", {"value": "a@example.com"}, format="json").status_code == 200
    assert api.put(D + "prefs/", {"value": {"lang": "en"}}, format="json").json()["value"] == {"lang": "en"}
    assert api.put(D + "email/", {"value": None}, format="json").json()["value"] is None
    got = api.get(D + "prefs/").json()
    assert set(got) == {"key", "value", "created_at", "updated_at"}
    assert [d["key"] for d in api.get(D).json()["results"]] == ["email", "prefs"]
    assert api.delete(D + "email/").status_code == 204
    assert_error(api.get(D + "email/"), 404, "not_found")
    assert_error(api.delete(D + "email/"), 404, "not_found")


def test_user_data_pages_in_key_order(api, tenant):
    UserDatum.objects.bulk_create(UserDatum(tenant=tenant, user_id="u1", key=f"k{i:03}", value=i) for i in range(7))
    page = api.get(D, {"page_size": 3}).json()
    keys = [d["key"] for d in page["results"]]
    while page["next"]:
        page = api.get(page["next"]).json()
        keys += [d["key"] for d in page["results"]]
    assert keys == [f"k{i:03}" for i in range(7)]


@pytest.mark.parametrize("body, field", [({}, "value"), ({"value": "nul\x00"}, "value"), ({"value": 1, "x": 2}, "x")])
def test_user_data_validation(api, tenant, body, field):
    assert_error(api.put(D + "k/", body, format="json"), 400, "invalid", field=field)
    assert not UserDatum.objects.exists()


def test_user_data_bad_key_in_path(api, tenant):
    assert_error(api.put(D + "k%00/", {"value": 1}, format="json"), 400, "invalid", field="key")
    assert_error(api.put(D + ("k" * 129) + "/", {"value": 1}, format="json"), 400, "invalid", field="key")
