"""Rounds over HTTP: auto and explicit ids, latest, list, delete, ETag and If-Match (412)."""

import pytest

from sessions_app import services
from sessions_app.models import Round, Session
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db
R = "/api/v1/users/u1/sessions/s1/rounds/"


def test_save_creates_the_session_and_numbers_rounds(api, tenant):
    first = api.post(R, {"state": {"a": 1}}, format="json")
    assert first.status_code == 201 and first.json()["round_id"] == 1 and first["ETag"] == '"1"'
    assert set(first.json()) == {"round_id", "state", "created_at", "updated_at", "version"}
    assert Session.objects.filter(tenant=tenant, user_id="u1", session_id="s1").exists()
    assert api.post(R, {"state": {}, "round_id": 10}, format="json").status_code == 201
    assert api.post(R, {"state": {}}, format="json").json()["round_id"] == 11


def test_save_with_existing_round_id_overwrites_200(api):
    api.post(R, {"state": {"v": 1}, "round_id": 3}, format="json")
    again = api.post(R, {"state": {"v": 2}, "round_id": 3}, format="json")
    assert again.status_code == 200 and again.json()["state"] == {"v": 2} and again["ETag"] == '"2"'


def test_get_latest_one_and_list(api):
    for round_id in (5, 2, 9):
        api.post(R, {"state": {"id": round_id}, "round_id": round_id}, format="json")
    latest = api.get(R + "latest/")
    assert latest.json()["round_id"] == 9 and latest["ETag"] == '"1"'
    assert api.get(R + "2/").json()["state"] == {"id": 2}
    listed = api.get(R, {"page_size": 2}).json()
    assert [r["round_id"] for r in listed["results"]] == [2, 5] and "state" not in listed["results"][0]
    assert [r["round_id"] for r in api.get(listed["next"]).json()["results"]] == [9]


def test_missing_rounds_are_404(api):
    assert_error(api.get(R + "latest/"), 404, "not_found")
    assert_error(api.get(R + "1/"), 404, "not_found")
    assert_error(api.get(R), 404, "not_found")  # no session
    api.post(R, {"state": {}}, format="json")
    assert_error(api.get(R + "2/"), 404, "not_found")
    assert_error(api.delete(R + "2/"), 404, "not_found")


def test_put_with_if_match_compare_and_set(api):
    created = api.put(R + "4/", {"state": {"v": 1}}, format="json")
    assert created.status_code == 201
    etag = created["ETag"]
    updated = api.put(R + "4/", {"state": {"v": 2}}, format="json", HTTP_IF_MATCH=etag)
    assert updated.status_code == 200 and updated["ETag"] == '"2"'
    stale = api.put(R + "4/", {"state": {"v": 3}}, format="json", HTTP_IF_MATCH=etag)
    assert_error(stale, 412, "precondition_failed")
    assert Round.objects.get(round_id=4).state == {"v": 2}
    assert api.put(R + "4/", {"state": {"v": 4}}, format="json", HTTP_IF_MATCH="*").status_code == 200
    assert_error(api.put(R + "5/", {"state": {}}, format="json", HTTP_IF_MATCH="*"), 412, "precondition_failed")
    assert_error(api.post(R, {"state": {}}, format="json", HTTP_IF_MATCH='"1"'), 412, "precondition_failed")


def test_delete_one_round(api):
    api.post(R, {"state": {}}, format="json")
    api.post(R, {"state": {}}, format="json")
    assert api.delete(R + "2/").status_code == 204
    assert api.get(R + "latest/").json()["round_id"] == 1
    assert api.post(R, {"state": {}}, format="json").json()["round_id"] == 2


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "state"),
        ({"state": [1]}, "state"),
        ({"state": {}, "round_id": -1}, "round_id"),
        ({"state": {}, "round_id": 2**31}, "round_id"),
        ({"state": {}, "round_id": 10**30}, "round_id"),
        ({"state": {}, "round_id": "x"}, "round_id"),
        ({"state": {}, "round_id": True}, "round_id"),
        ('{"state": {"deep": 1e999}}', "state"),  # parses as infinity
        ({"state": {"k\x00": 1}}, "state"),
        ({"state": {}, "extra": 1}, "extra"),
    ],
)
def test_save_validation(api, body, field):
    if isinstance(body, str):
        response = api.post(R, body, content_type="application/json")
    else:
        response = api.post(R, body, format="json")
    assert_error(response, 400, "invalid", field=field)
    assert not Round.objects.exists()


def test_round_id_in_path_out_of_range_is_400(api):
    assert_error(api.put(R + "2147483648/", {"state": {}}, format="json"), 400, "invalid", field="round_id")
    assert_error(api.get(R + "99999999999999999999/"), 404, "not_found")  # not a route
