"""Every limit and every kind of bad input through the API: a clear 4xx in the one JSON error
shape naming the field, and nothing stored changes (every table and the working state compared
before and after). Runs on SQLite and on PostgreSQL, which rejects NUL characters and lone
surrogates with errors that would otherwise be 500s."""

import json
from urllib.parse import quote

import pytest
from django.test import override_settings

from tests.api.assertions import assert_error
from tests.hardening.stored import stored_everything
from tests.hardening.writes import WRITE_IDS, WRITES, S, U, refused, send
from tests.quick_loop import few_in_the_quick_loop, quick_first

pytestmark = pytest.mark.django_db

# Every write route; the quick loop sends a session's create and a message append, the slow set the rest.
EVERY_WRITE = few_in_the_quick_loop(WRITES, WRITE_IDS, ["post /api/v1/sessions/", f"post {S}messages/"])


def deep(levels: int):
    value: dict = {}
    for _ in range(levels):
        value = {"d": value}
    return value


@pytest.mark.parametrize("method, path, body", EVERY_WRITE)
def test_every_write_accepts_its_good_body(api, full_session, method, path, body):
    assert send(api, method, path, body).status_code in (200, 201)


@pytest.mark.parametrize("method, path, body", EVERY_WRITE)
def test_a_body_over_the_limit_is_413_everywhere(api, full_session, method, path, body):
    padded = json.dumps(body)[:-1] + ', "padding": "' + "x" * 3000 + '"}'
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2000):
        refused(api, method, path, padded, 413, "too_large")


@pytest.mark.parametrize("method, path, body", EVERY_WRITE)
def test_a_body_that_is_not_json_is_415_everywhere(api, full_session, method, path, body):
    for content_type in ["text/plain", "application/x-www-form-urlencoded", "application/xml"]:
        refused(api, method, path, json.dumps(body), 415, "unsupported_media_type", content_type=content_type)


# Unknown fields: a typo is a 400 naming it, never silently dropped. Working state and user-data
# values are free-form objects, so they have no unknown fields.
UNKNOWN_FIELDS = [
    ("post", "/api/v1/sessions/", {"user_id": "u1", "session_id": "s2", "colour": 1}, "colour"),
    ("patch", S, {"metadata": {}, "version": 9}, "version"),
    ("post", S + "messages/", {"messages": [{"content": "x"}], "colour": 1}, "colour"),
    ("post", S + "messages/", {"messages": [{"content": "x", "colour": 1}]}, "messages[0]"),
    ("post", S + "messages/", {"content": "x", "colour": 1}, "messages[0]"),
    ("post", S + "rounds/", {"state": {}, "round": 2}, "round"),
    ("put", S + "rounds/1/", {"state": {}, "round_id": 1}, "round_id"),
    ("post", S + "checkpoints/", {"label": "x", "keys": ["a"]}, "keys"),
    ("post", S + "transitions/", {"to_agent": "c", "why": "x"}, "why"),
    ("put", U + "email/", {"value": 1, "ttl": 5}, "ttl"),
]


@pytest.mark.parametrize("method, path, body, field", quick_first(UNKNOWN_FIELDS, 2))
def test_unknown_fields_are_400_naming_the_field(api, full_session, method, path, body, field):
    refused(api, method, path, body, 400, "invalid", field)


NOT_STRINGS = [
    ("post", "/api/v1/sessions/", {"user_id": 123, "session_id": "s2"}, "user_id"),
    ("post", "/api/v1/sessions/", {"user_id": "u1", "session_id": 7}, "session_id"),
    ("patch", S, {"agent_id": True}, "agent_id"),
    ("post", S + "messages/", {"content": "x", "role": 1}, "messages[0].role"),
    ("post", S + "checkpoints/", {"label": 1.5}, "label"),
    ("post", S + "checkpoints/", {"label": "x", "include_keys": [1]}, "include_keys[0]"),
    ("post", S + "transitions/", {"to_agent": ["c"]}, "to_agent"),
]


@pytest.mark.parametrize("method, path, body, field", quick_first(NOT_STRINGS, 2))
def test_a_number_or_other_non_string_where_a_string_belongs_is_400_not_converted(
    api, full_session, method, path, body, field
):
    refused(api, method, path, body, 400, "invalid", field)


def test_a_batch_of_500_messages_fits_and_501_is_refused(api, full_session):
    refused(api, "post", S + "messages/", {"messages": [{"content": "x"}] * 501}, 400, "invalid", "messages")
    response = api.post(S + "messages/", {"messages": [{"content": str(i)} for i in range(500)]}, format="json")
    assert response.status_code == 201 and len(response.json()["messages"]) == 500


# Malformed JSON, JSON nested too deep, bad identifiers, page sizes and round ids in paths, on every
# endpoint and field: hardening/test_input_rules.py (each rule's table: test_validators.py).


def test_json_nested_within_the_limit_is_stored_as_sent(api, full_session):
    assert api.post(S + "rounds/", {"state": deep(30)}, format="json").json()["state"] == deep(30)


NOT_OBJECTS = [
    ("post", S + "rounds/", {"state": []}, "state"),
    ("post", S + "rounds/", {"state": "text"}, "state"),
    ("post", S + "rounds/", {"state": 3}, "state"),
    ("post", S + "rounds/", {"state": None}, "state"),
    ("post", S + "rounds/", {}, "state"),
    ("put", S + "rounds/1/", {"state": [1]}, "state"),
    ("post", S + "checkpoints/", {"label": "x", "state": [1]}, "state"),
    ("put", S + "working-state/", [1], None),
    ("put", S + "working-state/", "text", None),
    ("patch", S + "working-state/", [1], None),
    ("patch", S, {"metadata": [1]}, "metadata"),
    ("post", "/api/v1/sessions/", {"user_id": "u1", "metadata": "text"}, "metadata"),
]


@pytest.mark.parametrize("method, path, body, field", quick_first(NOT_OBJECTS, 2))
def test_state_and_metadata_must_be_objects(api, full_session, method, path, body, field):
    refused(api, method, path, body, 400, "invalid", field)


@pytest.mark.parametrize("round_id", quick_first([-1, 2**31, 10**30, 1.5, 1e100, "x", True, [1], {}], 3))
def test_bad_round_ids_in_the_body_are_400(api, full_session, round_id):
    refused(api, "post", S + "rounds/", {"state": {}, "round_id": round_id}, 400, "invalid", "round_id")


@pytest.mark.parametrize("round_id", ["-1", "1.5", "x", "1e3", "9999999999999"])
def test_round_ids_that_are_not_numbers_in_the_path_are_404(api, full_session, round_id):
    refused(api, "put", f"{S}rounds/{round_id}/", {"state": {}}, 404, "not_found")


def test_round_ids_zero_and_the_32_bit_maximum_are_accepted(api, full_session):
    assert api.put(S + "rounds/0/", {"state": {"r": 0}}, format="json").status_code == 201
    assert api.post(S + "rounds/", {"state": {}, "round_id": 2**31 - 1}, format="json").status_code == 201
    assert api.get(S + "rounds/latest/").json()["round_id"] == 2**31 - 1


def quoted(text: str) -> str:
    return quote(text, safe="")


@pytest.mark.parametrize("user_id, session_id", [("用户", "会话-1"), ("😀", "🚀 launch"), ("ünïcode", "e\u0301")])
def test_unicode_identifiers_round_trip(api, tenant, user_id, session_id):
    created = api.post("/api/v1/sessions/", {"user_id": user_id, "session_id": session_id}, format="json")
    assert created.status_code == 201
    path = f"/api/v1/users/{quoted(user_id)}/sessions/{quoted(session_id)}/"
    fetched = api.get(path)
    assert fetched.status_code == 200
    assert (fetched.json()["user_id"], fetched.json()["session_id"]) == (user_id, session_id)
    assert (
        api.put(
            f"/api/v1/users/{quoted(user_id)}/data/{quoted(session_id)}/", {"value": "ok"}, format="json"
        ).status_code
        == 200
    )


def test_identifiers_of_exactly_128_characters_are_accepted(api, tenant):
    long_id = "é" * 128
    assert api.post("/api/v1/sessions/", {"user_id": long_id, "session_id": long_id}, format="json").status_code == 201
    assert api.get(f"/api/v1/users/{quoted(long_id)}/sessions/{quoted(long_id)}/").status_code == 200


ROWS_LISTS = ["/api/v1/sessions/", S + "messages/"]  # rows written by the database: up to 2,000
LISTS = [S + "rounds/", S + "checkpoints/", S + "transitions/", U]  # up to 500


@pytest.mark.parametrize("path, largest", [(path, 2000) for path in ROWS_LISTS] + [(path, 500) for path in LISTS])
def test_page_size_is_served_up_to_its_list_s_largest_and_refused_past_it(api, full_session, path, largest):
    assert api.get(f"{path}?page_size={largest}").status_code == 200
    refused(api, "get", f"{path}?page_size={largest + 1}", None, 400, "invalid", "page_size")


@pytest.mark.parametrize(
    "path, largest",
    [
        ("/api/v1/sessions/", 2000),
        ("/api/v1/users/{user_id}/sessions/{session_id}/messages/", 2000),
        ("/api/v1/users/{user_id}/sessions/{session_id}/rounds/", 500),
    ],
)
def test_the_schema_states_each_list_s_largest_page(api, path, largest):
    # The served schema as JSON: the same document as the default YAML, read in milliseconds, not a second.
    operation = api.get("/api/schema/", {"format": "json"}).json()["paths"][path]["get"]
    (page_size,) = [p for p in operation["parameters"] if p["name"] == "page_size"]
    assert page_size["schema"]["maximum"] == largest
    assert ("AGENTSTATE_PAGE_MAX_BYTES" in page_size["description"]) == (largest > 500)


def test_an_empty_body_never_reads_as_an_empty_object(api, full_session):
    """Regression: an empty PUT of working state wiped it, an empty POST stored an empty message."""
    for method, path in [("put", S + "working-state/"), ("post", S + "messages/"), ("patch", S)]:
        refused(api, method, path, "", 400, "invalid")
        before = stored_everything()
        assert_error(api.generic(method.upper(), path), 400, "invalid")  # no Content-Type either
        assert stored_everything() == before
    ended = api.post(S + "end/")  # the one write that takes no body
    assert ended.status_code == 200 and ended.json()["ended_at"]


def test_working_state_cannot_grow_past_its_limit_by_patches(api, full_session, settings):
    """Regression: each PATCH was bounded by the body limit, their sum by nothing."""
    settings.WORKING_STATE_MAX_BYTES = 300
    for n in range(4):
        assert api.patch(S + "working-state/", {f"k{n}": "x" * 50}, format="json").status_code == 200
    refused(api, "patch", S + "working-state/", {"k9": "x" * 100}, 400, "invalid", "working_state")
    refused(api, "put", S + "working-state/", {"big": "x" * 400}, 400, "invalid", "working_state")
    # Replacing or removing keys makes room again.
    assert api.patch(S + "working-state/", {"k0": None, "k1": None, "k9": "x" * 100}, format="json").status_code == 200
    assert set(api.get(S + "working-state/").json()) == {"kept", "k2", "k3", "k9"}
