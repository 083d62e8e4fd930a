"""One JSON error shape for everything a client can send wrong, and never a 500."""

import json

import pytest
from django.test import override_settings
from rest_framework.settings import api_settings

from sessions_app import services
from sessions_app.models import Message, Session
from tests.api.assertions import assert_error

pytestmark = pytest.mark.django_db
S = "/api/v1/users/u1/sessions/s1/"
DEEP: list = []
for _ in range(40):
    DEEP = [DEEP]


@pytest.fixture
def session(tenant):
    return services.session_create(tenant=tenant, user_id="u1", session_id="s1")


@pytest.mark.parametrize("body", ["{bad json", "", "[", '{"user_id": NaN}', '{"user_id": "\\ud800"}', "\x00"])
def test_malformed_json_is_400(api, body):
    response = api.post("/api/v1/sessions/", body, content_type="application/json")
    assert_error(response, 400, "invalid")
    assert not Session.objects.exists()


@pytest.mark.parametrize("method, path", [("post", S + "messages/"), ("put", S + "working-state/"), ("patch", S)])
def test_an_empty_body_is_400_not_an_empty_document(api, session, method, path):
    services.working_state_replace(session=session, data={"kept": 1})
    assert_error(getattr(api, method)(path, content_type="application/json"), 400, "invalid")
    assert not Message.objects.exists()
    assert api.get(S + "working-state/").json() == {"kept": 1}


def test_end_takes_no_body(api, session):
    assert api.post(S + "end/").status_code == 200


def test_huge_integers_never_500(api, session):
    digits = "9" * 5000  # beyond Python's int parsing limit
    assert_error(
        api.post(
            S + "messages/", f'{{"content": "x", "metadata": {{"n": {digits}}}}}', content_type="application/json"
        ),
        400,
        "invalid",
    )
    big = api.post(S + "messages/", {"content": "x", "metadata": {"n": 10**40}}, format="json")
    assert big.status_code == 201 and big.json()["messages"][0]["metadata"] == {"n": 10**40}


def test_nul_characters_anywhere_are_400(api, session):
    assert_error(api.get("/api/v1/users/u%00/sessions/s1/"), 400, "invalid", field="user_id")
    assert_error(api.post(S + "messages/", {"content": [{"type": "t\x00"}]}, format="json"), 400, "invalid")
    assert_error(api.patch(S, {"metadata": {"\x00": 1}}, format="json"), 400, "invalid", field="metadata")
    assert not Message.objects.exists()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_oversized_body_is_413_and_stores_nothing(api, session):
    response = api.post(S + "messages/", {"content": "x" * 2000}, format="json")
    assert_error(response, 413, "too_large")
    assert not Message.objects.exists()


def test_unsupported_media_type_is_415(api):
    response = api.post("/api/v1/sessions/", "user_id=u1", content_type="application/x-www-form-urlencoded")
    assert_error(response, 415, "unsupported_media_type")


def test_method_not_allowed_is_405(api, session):
    assert_error(api.put(S + "end/", {}, format="json"), 405, "method_not_allowed")


def test_not_acceptable_is_406_in_json(api, session):
    assert_error(api.get(S, HTTP_ACCEPT="application/xml"), 406, "not_acceptable")


@pytest.mark.parametrize("path", [S, "/api/v1/langgraph/checkpoints/"])
def test_an_unknown_format_is_400_not_a_missing_route(api, session, path):
    error = assert_error(api.get(path, {"format": "xml"}), 400, "invalid", field="format")
    assert "json" in error["fields"]["format"][0]


def test_unknown_url_is_404_json(api):
    assert_error(api.get("/api/v1/nothing-here/"), 404, "not_found")
    assert_error(api.get("/api/v1/users/u1/sessions/s%2F1/"), 404, "not_found")  # a "/" is no identifier


def test_missing_trailing_slash_reaches_the_endpoint(api, session):
    assert api.post(S + "messages", {"content": "x"}, format="json").status_code == 201
    with override_settings(DEBUG=True):  # Django's APPEND_SLASH would raise for a POST here
        assert api.post(S + "messages", {"content": "y"}, format="json").status_code == 201


def test_throttled_is_429_with_retry_after(api, monkeypatch):
    monkeypatch.setitem(api_settings.DEFAULT_THROTTLE_RATES, "api_key", "2/minute")
    with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}):
        statuses = [api.get("/api/v1/sessions/").status_code for _ in range(3)]
        response = api.get("/api/v1/sessions/")
    assert statuses == [200, 200, 429]
    assert_error(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("post", "/api/v1/sessions/", {"user_id": {"nested": 1}}),
        ("post", "/api/v1/sessions/", {"user_id": "u", "metadata": DEEP}),
        ("post", "/api/v1/sessions/", {"user_id": "u", "session_id": 12.5}),
        ("post", S + "messages/", {"messages": [None]}),
        ("post", S + "messages/", {"messages": [{"content": [1, 2]}]}),
        ("post", S + "messages/", {"messages": [{"usage": "x"}]}),
        ("post", S + "messages/", {"messages": [{"content": "x"}] * 501}),
        ("post", S + "rounds/", {"state": None}),
        ("post", S + "checkpoints/", {"label": None}),
        ("post", S + "checkpoints/", {"label": "x", "include_keys": [None]}),
        ("post", S + "transitions/", {"to_agent": None}),
        ("patch", S + "working-state/", None),
        ("put", "/api/v1/users/u1/data/k/", "just a string"),
        ("get", S + "messages/?after_seq=1e10", None),
        ("get", "/api/v1/sessions/?ended=maybe&created_after=2020-13-45", None),
    ],
)
def test_odd_input_is_a_clean_4xx(api, session, method, path, body):
    if method == "get":
        response = api.get(path)
    else:
        response = getattr(api, method)(path, json.dumps(body), content_type="application/json")
    assert response.status_code < 500, response.content
    if response.status_code >= 400:
        assert set(response.json()["error"]) == {"code", "message", "fields"}
