"""Every answer under /api/ is JSON, whatever DEBUG says; a missing session is named as such."""

import pytest
from django.test import Client


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize(
    "path", ["/api/v1/nothing-here/", "/api/v1/users/alice/sessions/s1/nope/", "/api/v2/sessions/"]
)
def test_an_unknown_api_url_is_a_json_404(api, settings, debug, path):
    settings.DEBUG = debug
    response = api.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "not_found"


def test_a_write_to_an_unknown_api_url_is_a_json_404_not_a_csrf_page():
    """Django's CSRF check must not answer an API client's write with its HTML 403 page."""
    response = Client(enforce_csrf_checks=True).put(
        "/api/v1/users/alice/sessions/s1/nope/", "{}", content_type="application/json"
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_the_latest_round_of_a_missing_session_says_the_session_is_missing(api):
    response = api.get("/api/v1/users/alice/sessions/missing/rounds/latest/")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Session not found."


def test_the_latest_round_of_a_session_without_rounds_says_so(api):
    api.post("/api/v1/sessions/", {"user_id": "alice", "session_id": "s1"}, format="json")
    response = api.get("/api/v1/users/alice/sessions/s1/rounds/latest/")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "The session has no rounds."
