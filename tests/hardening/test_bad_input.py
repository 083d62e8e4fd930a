"""Bad input is a clear 400 and stores nothing, on SQLite and on PostgreSQL (which rejects NUL
characters and lone surrogates in text and jsonb with errors that would otherwise be 500s);
through the API, the inputs that reached a 500 before: bodies nesting deep enough to exhaust the
parser's stack, datetimes that exist only with their offset or carry one PostgreSQL refuses, and
forged or garbled cursors."""

import base64
from datetime import datetime
from urllib.parse import urlencode

import pytest

from agentstate.exceptions import InvalidInput
from agentstate.validation import MAX_BODY_DEPTH
from sessions_app import services
from sessions_app.models import Round, Session
from tests.api.assertions import assert_error
from tests.hardening.stored import stored_everything
from tests.hardening.writes import WRITE_IDS, WRITES, S, U, refused

LONE_SURROGATES = ["\ud800", "ok\udfff", "\udc80tail"]


@pytest.mark.django_db
@pytest.mark.parametrize("text", LONE_SURROGATES)
def test_lone_surrogates_in_ids_are_invalid_input_and_nothing_is_stored(tenant, text):
    with pytest.raises(InvalidInput) as raised:
        services.session_create(tenant=tenant, user_id=f"user{text}", session_id="s1")
    assert "user_id" in raised.value.fields
    assert not Session.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "state", [{"note": text} for text in LONE_SURROGATES] + [{text: 1} for text in LONE_SURROGATES]
)
def test_lone_surrogates_in_state_values_and_keys_are_invalid_input(tenant, state):
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"kept": True})
    with pytest.raises(InvalidInput) as raised:
        services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"deep": [state]})
    assert "state" in raised.value.fields
    assert [r.state for r in Round.objects.all()] == [{"kept": True}]


# --- Through the API: inputs that reached a 500 (issue 9, defect 6) ---------------------------

LISTS = ["/api/v1/sessions/", S + "messages/", S + "rounds/", S + "checkpoints/", S + "transitions/", U]


def nested(levels: int, inner: str = "") -> str:
    return "[" * levels + inner + "]" * levels


@pytest.mark.crosscheck
@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        nested(950),  # 1.9 KB: the JSON parser raised RecursionError
        '{"state": ' + nested(200, "1") + "}",
        '{"messages": [{"content": "x", "metadata": {"a": ' + nested(100) + "}}]}",
        "[" * 5000,  # never closed
        '["' + "]" * 40 + '", ' + nested(70) + "]",  # brackets inside strings hide nothing
    ],
    ids=["950-deep", "state-200", "metadata-100", "unclosed", "brackets-in-strings"],
)
@pytest.mark.parametrize("method, path, _", WRITES, ids=WRITE_IDS)
def test_a_body_nesting_too_deep_is_400_naming_the_body_on_every_write(api, full_session, method, path, _, body):
    error = refused(api, method, path, body, 400, "invalid", "body")
    assert str(MAX_BODY_DEPTH) in error["message"]


@pytest.mark.django_db
def test_a_body_within_the_body_depth_is_judged_by_its_fields(api, full_session):
    """Brackets inside strings do not count; a document just over its own limit still names its field."""
    state = {"text": "[" * 100 + '\\"' + "{" * 100}
    assert api.post(S + "rounds/", {"state": state}, format="json").json()["state"] == state
    refused(api, "post", S + "rounds/", '{"state": {"a": ' + nested(MAX_BODY_DEPTH - 2) + "}}", 400, "invalid", "state")


EXTREME_IN_UTC = [
    "9999-12-31T23:59:59-01:00",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59.999999-00:01",
    "0001-01-01T00:00:00+23:59",
]
EXTREME_BUT_VALID = [
    "2026-01-01T00:00:00-20:00",
    "2026-01-01T00:00:00+23:59",
    "2026-01-01T00:00:00-23:59",
    "0001-01-01T00:00:00-01:00",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T10:00:00+13:00",
]
DATETIME_FILTERS = ["created_after", "created_before", "updated_after", "updated_before"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "value",
    [
        *EXTREME_IN_UTC,
        "2026-01-01T00:00:00+24:00",
        "2026-01-01T00:00:00-99:00",
        "10000-01-01T00:00:00Z",
        "0000-12-31T00:00:00Z",
    ],
)
@pytest.mark.parametrize("name", DATETIME_FILTERS)
def test_datetimes_that_do_not_exist_in_utc_are_400_naming_the_filter(api, full_session, name, value):
    """9999-12-31T23:59:59-01:00 overflowed on SQLite (OverflowError): a 500."""
    refused(
        api,
        "get",
        "/api/v1/sessions/",
        None,
        400,
        "invalid",
        name,
        QUERY_STRING=urlencode({name: value, "user_id": "u1"}),
    )


@pytest.mark.django_db
@pytest.mark.parametrize("value", EXTREME_BUT_VALID)
@pytest.mark.parametrize("name", DATETIME_FILTERS)
def test_extreme_datetimes_and_offsets_filter_in_utc(api, full_session, name, value):
    """2026-01-01T00:00:00-20:00 reached PostgreSQL with an offset it refuses (DataError): a 500."""
    response = api.get("/api/v1/sessions/", {name: value, "user_id": "u1"})
    assert response.status_code == 200, response.content[:300]
    bound = datetime.fromisoformat(value.replace("Z", "+00:00"))
    created = (
        full_session.created_at if name.startswith("created") else Session.objects.get(pk=full_session.pk).updated_at
    )
    kept = created >= bound if name.endswith("after") else created < bound
    assert [s["session_id"] for s in response.json()["results"]] == (["s1"] if kept else [])


def forged(position: str, **extra: str) -> str:
    """A cursor as DRF encodes one, naming any position."""
    return base64.b64encode(urlencode({"p": position, **extra}).encode()).decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "position", [*EXTREME_IN_UTC, "not a time", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00+24:00"]
)
def test_a_session_cursor_whose_position_does_not_exist_in_utc_is_400(api, full_session, position):
    refused(
        api,
        "get",
        "/api/v1/sessions/",
        None,
        400,
        "invalid",
        "cursor",
        QUERY_STRING=urlencode({"cursor": forged(position)}),
    )


@pytest.mark.django_db
@pytest.mark.parametrize("position", EXTREME_BUT_VALID)
@pytest.mark.parametrize("reverse", ["0", "1"])
def test_a_session_cursor_at_an_extreme_valid_time_pages_in_utc(api, full_session, position, reverse):
    response = api.get("/api/v1/sessions/", {"cursor": forged(position, r=reverse)})
    assert response.status_code == 200, response.content[:300]
    bound = datetime.fromisoformat(position.replace("Z", "+00:00"))
    after = full_session.created_at > bound if reverse == "0" else full_session.created_at < bound
    assert [s["session_id"] for s in response.json()["results"]] == (["s1"] if after else [])


GARBLED_CURSORS = [
    "not base64!",
    "%%%",
    "=" * 8,
    base64.b64encode(b"\xff\xfe").decode(),
    base64.b64encode(b"p=1&o=-5").decode(),
    forged("1", o="99999999999999999999"),
    forged("9" * 40),
    forged("-" + "9" * 30),
    forged("x\x00y"),
    forged("1", r="maybe"),
    forged("1" * 5000),
]


@pytest.mark.django_db
@pytest.mark.parametrize("cursor", ["AAAA", "!!!", "%00"])
@pytest.mark.parametrize("path", LISTS)
def test_a_cursor_that_decodes_to_nothing_is_400_on_every_list(api, full_session, path, cursor):
    """Every cursor the server gives names a position, an offset or a direction; one that decodes to
    none of them was not given by it (the ADK pages refuse it the same way). An empty one is none."""
    assert_error(api.get(path, {"cursor": cursor}), 400, "invalid", "cursor")
    assert api.get(path, {"cursor": ""}).status_code == 200


@pytest.mark.crosscheck
@pytest.mark.django_db
@pytest.mark.parametrize("cursor", GARBLED_CURSORS)
@pytest.mark.parametrize("path", LISTS)
def test_forged_or_garbled_cursors_never_reach_the_database(api, full_session, path, cursor):
    """Every list: a 400 naming the cursor, or (where the forged position is a valid value) a page."""
    before = stored_everything()
    response = api.get(path, {"cursor": cursor})
    assert stored_everything() == before
    if response.status_code != 200:
        assert_error(response, 400, "invalid", "cursor")
