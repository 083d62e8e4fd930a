"""Bad input is a clear 400 and stores nothing, on SQLite and on PostgreSQL (which rejects NUL
characters and lone surrogates in text and jsonb with errors that would otherwise be 500s);
through the API, the inputs that reached a 500 before: bodies nesting deep enough to exhaust the
parser's stack, datetimes that exist only with their offset or carry one PostgreSQL refuses, and
forged cursors. The same inputs on every endpoint and field: test_input_rules.py; each rule against
its whole table of values: test_validators.py."""

from datetime import datetime
from urllib.parse import urlencode

import pytest

from agentstate.exceptions import InvalidInput
from agentstate.validation import MAX_BODY_DEPTH
from sessions_app import services
from sessions_app.models import Round, Session
from tests.hardening.edge_values import EXTREME_BUT_VALID, EXTREME_IN_UTC, forged
from tests.hardening.writes import S, refused
from tests.quick_loop import first_of_each_kind

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


def nested(levels: int, inner: str = "") -> str:
    return "[" * levels + inner + "]" * levels


@pytest.mark.django_db
def test_a_body_within_the_body_depth_is_judged_by_its_fields(api, full_session):
    """Brackets inside strings do not count; a document just over its own limit still names its field."""
    state = {"text": "[" * 100 + '\\"' + "{" * 100}
    assert api.post(S + "rounds/", {"state": state}, format="json").json()["state"] == state
    refused(api, "post", S + "rounds/", '{"state": {"a": ' + nested(MAX_BODY_DEPTH - 2) + "}}", 400, "invalid", "state")


DATETIME_FILTERS = ["created_after", "created_before", "updated_after", "updated_before"]


FILTERED = [(name, value) for name in DATETIME_FILTERS for value in EXTREME_BUT_VALID]


# The quick loop: each filter at the first extreme time; the slow set every time with every filter.
@pytest.mark.django_db
@pytest.mark.parametrize(
    "name, value", first_of_each_kind(FILTERED, [f"{name}-{value}" for name, value in FILTERED], lambda c: c[0])
)
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


PAGED = [(reverse, position) for reverse in ("0", "1") for position in EXTREME_BUT_VALID]


# The quick loop: each direction from the first extreme time; the slow set every time.
@pytest.mark.django_db
@pytest.mark.parametrize("reverse, position", first_of_each_kind(PAGED, [f"{r}-{p}" for r, p in PAGED], lambda c: c[0]))
def test_a_session_cursor_at_an_extreme_valid_time_pages_in_utc(api, full_session, position, reverse):
    response = api.get("/api/v1/sessions/", {"cursor": forged(position, r=reverse)})
    assert response.status_code == 200, response.content[:300]
    bound = datetime.fromisoformat(position.replace("Z", "+00:00"))
    after = full_session.created_at > bound if reverse == "0" else full_session.created_at < bound
    assert [s["session_id"] for s in response.json()["results"]] == (["s1"] if after else [])
