"""API answers rendered by agentstate.api.renderers.JSONRenderer (orjson) hold what DRF's own
renderer would write: every value intact, the JavaScript-unsafe separators escaped, indentation on
request."""

import json

import pytest

from sessions_app import services

pytestmark = pytest.mark.django_db
M = "/api/v1/users/u1/sessions/s1/messages/"


@pytest.fixture
def session(tenant):
    return services.session_create(tenant=tenant, user_id="u1", session_id="s1")


def test_values_orjson_cannot_encode_come_back_intact(api, session):
    metadata = {"big": 2**70, "negative": -(2**65), "ratio": 0.1, "text": "caf\u00e9 \u2603"}
    api.post(M, {"content": "x", "metadata": metadata}, format="json")
    response = api.get(M)
    assert response.status_code == 200
    assert json.loads(response.content)["results"][0]["metadata"] == metadata


def test_line_and_paragraph_separators_are_escaped(api, session):
    api.post(M, {"content": "a\u2028b\u2029c"}, format="json")
    body = api.get(M).content
    assert b"\xe2\x80\xa8" not in body and b"\xe2\x80\xa9" not in body and b"a\\u2028b\\u2029c" in body
    assert json.loads(body)["results"][0]["content"] == "a\u2028b\u2029c"


def test_compact_by_default_indented_on_request(api, session):
    api.post(M, {"content": "x"}, format="json")
    assert b"\n" not in api.get(M).content and b'":"' in api.get(M).content
    indented = api.get(M, HTTP_ACCEPT="application/json; indent=2").content
    assert b'\n  "next": null' in indented


def test_datetimes_keep_the_api_spelling(api, session):
    stored = api.post(M, {"content": "x"}, format="json").json()["messages"][0]
    assert stored["created_at"].endswith("Z")
