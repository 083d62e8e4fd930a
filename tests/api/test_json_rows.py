"""The history and session lists have their rows written as JSON by the database
(agentstate.api.json_rows): each row must hold exactly what the serializer writes for the same
object everywhere else in the API (the append's answer, a session's GET), value for value."""

import json
from datetime import UTC, datetime

import pytest
from django.db.models import F

from agentstate.api.json_rows import JSONRow
from agentstate.api.renderers import JSONRenderer
from sessions_app import services
from sessions_app.api.serializers import MessageSerializer
from sessions_app.models import Message, Session

pytestmark = pytest.mark.django_db
M = "/api/v1/users/u1/sessions/s1/messages/"

AWKWARD_TEXT = 'quote " backslash \\ slash / tab \t newline \n nul-free \x01 caf\u00e9 \u2028\u2029 \U0001f600 \ufeff'
MESSAGES = [
    {"role": "user", "content": AWKWARD_TEXT},
    {"role": "assistant", "content": None, "usage": None, "metadata": {}},
    {
        "role": "assistant",
        "type": "function_call",
        "status": "completed",
        "name": "lookup",
        "client_id": "c-1",
        "content": [{"type": "text", "text": "part"}, {"type": "image", "url": "https://x/y.png", "detail": None}],
        "metadata": {"nested": {"list": [1, 2.5, -3, True, False, None], "deep": {"a": {"b": {"c": []}}}}},
        "usage": {"input_tokens": 12, "output_tokens": 0, "ratio": 0.1, "tiny": 1e-7, "huge": 1e300},
    },
    {"role": "tool", "content": [{"type": "output", "limits": [2**63 - 1, -(2**63)]}]},
    {"role": "user", "content": "past 64 bits", "metadata": {"big": 2**70, "negative": -(2**65)}},
    {"role": "user", "content": "", "metadata": {"": "empty key", "k\u00e9y": "\u00e9"}},
]


def _as_api(data) -> object:
    """What a client decodes from ``data`` rendered by the API's renderer."""
    return json.loads(JSONRenderer().render(data))


@pytest.fixture
def history(tenant):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.message_append(session=session, messages=[dict(m) for m in MESSAGES])
    # One message stored on a whole second: Python's isoformat leaves out the fraction then.
    Message.objects.filter(session=session, seq=2).update(created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    return session


def test_every_message_reads_as_the_serializer_writes_it(api, history):
    expected = [_as_api(MessageSerializer(m).data) for m in Message.objects.filter(session=history).order_by("seq")]
    assert expected[1]["created_at"] == "2026-01-02T03:04:05Z"
    assert json.loads(api.get(M).content)["results"] == expected
    assert json.loads(api.get(M, {"recent": 6}).content)["results"] == expected
    assert json.loads(api.get(M, {"page_size": 2}).content)["results"] == expected[:2]
    assert json.loads(api.get(M, {"role": "assistant"}).content)["results"] == expected[1:3]


def test_a_datetime_stored_with_an_offset_reads_in_utc(api, history):
    """Rows written by raw SQL (a migration, a bulk load) may carry an offset in SQLite's text."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Message._meta.db_table} SET created_at = %s WHERE session_id = %s AND seq = 3",  # noqa: S608 (the model's own table name)
            ["2026-01-02 08:04:05.000001+05:00", history.pk],
        )
    assert json.loads(api.get(M).content)["results"][2]["created_at"] == "2026-01-02T03:04:05.000001Z"


def test_indented_answers_hold_the_same_rows(api, history):
    compact = json.loads(api.get(M).content)
    indented = api.get(M, HTTP_ACCEPT="application/json; indent=2").content
    assert b'\n  "results": [' in indented and json.loads(indented) == compact


def test_the_browsable_api_shows_the_rows(client, django_user_model, history):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    page = client.get(M, {"tenant": history.tenant.slug}, HTTP_ACCEPT="text/html")
    assert page.status_code == 200 and b"past 64 bits" in page.content and b"lookup" in page.content


def test_cursor_pages_of_rows_cover_the_history_once(api, history):
    seen, url = [], M + "?page_size=4"
    while url:
        body = json.loads(api.get(url).content)
        seen += [m["seq"] for m in body["results"]]
        url = body["next"]
    assert seen == list(range(1, len(MESSAGES) + 1))
    previous = json.loads(api.get(json.loads(api.get(M + "?page_size=4").content)["next"]).content)["previous"]
    assert [m["seq"] for m in json.loads(api.get(previous).content)["results"]] == [1, 2, 3, 4]


def test_every_session_in_the_list_reads_as_its_get(api, tenant, history):
    services.message_append(session=history, messages=[{"role": "user", "content": "x"}])
    fork = services.session_fork(session=history, new_session_id="s1-fork", up_to_seq=3)
    services.session_create(tenant=tenant, user_id="u1", session_id="plain", agent_id="a", metadata={"m": [1, "2"]})
    services.session_end(session=Session.objects.get(session_id="plain"))
    listed = json.loads(api.get("/api/v1/sessions/", {"user_id": "u1"}).content)["results"]
    assert [s["session_id"] for s in listed] == ["s1", "s1-fork", "plain"]
    for row in listed:
        got = json.loads(api.get(f"/api/v1/users/u1/sessions/{row['session_id']}/").content)
        assert row == got
    assert listed[1]["forked_from"] == {"session_id": "s1", "seq": 3, "round": fork.forked_from_round}
    assert listed[0]["forked_from"] is None and listed[2]["ended_at"].endswith("Z")


def test_a_nested_row_keeps_null_values_and_key_order(history):
    row = Message.objects.filter(session=history, seq=2).values_list(
        JSONRow(seq=F("seq"), client_id=F("client_id"), name=F("name")), flat=True
    )
    assert next(iter(row)).replace(" ", "") == '{"seq":2,"client_id":null,"name":""}'


def test_a_shape_the_rows_cannot_write_is_refused_not_guessed():
    from django.core.exceptions import ImproperlyConfigured
    from rest_framework import serializers

    from agentstate.api.json_rows import row_expression
    from agentstate.api.serializers import Output

    class WithAProperty(Output):
        is_ended = serializers.BooleanField()

    class WithAFloat(Output):
        last_update_time = serializers.FloatField()

    with pytest.raises(ImproperlyConfigured, match="no column is_ended"):
        row_expression(WithAProperty, Session)
    with pytest.raises(ImproperlyConfigured, match="no JSON rendering for FloatField"):
        row_expression(WithAFloat, Session)


def _pages(api, url: str, link: str = "next") -> list[list[dict]]:
    """The pages from ``url`` on, following ``link`` (``next``, or ``previous``: then oldest first)."""
    pages = []
    while url:
        body = json.loads(api.get(url).content)
        pages.append(body["results"])
        url = body[link]
    return pages if link == "next" else pages[::-1]


@pytest.mark.parametrize("page_size", [2000, 500, 50])
def test_a_page_ends_early_when_its_bytes_run_out_and_loses_no_row(api, tenant, settings, page_size):
    """Pages of every size: a page of 500 of the largest messages once held 2.5 GB."""
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    texts = ["x" * (40 * (i % 7)) for i in range(40)] + ["larger than a whole page " * 100, "after it"]
    services.message_append(session=session, messages=[{"role": "user", "content": t} for t in texts])
    settings.PAGE_MAX_BYTES = 1_000

    pages = _pages(api, M + f"?page_size={page_size}")
    assert [m["content"] for page in pages for m in page] == texts  # every message once, in order
    assert 1 < max(map(len, pages)) < len(texts)
    for page in pages:  # within the budget but for the row that crossed it, which ends the page
        assert sum(len(json.dumps(m, separators=(",", ":")).encode()) for m in page[:-1]) < settings.PAGE_MAX_BYTES
    assert pages[-2][-1]["content"] == texts[-2] and [m["content"] for m in pages[-1]] == ["after it"]

    body = json.loads(api.get(M + f"?page_size={page_size}").content)
    while body["next"]:
        body = json.loads(api.get(body["next"]).content)
    back = _pages(api, body["previous"], "previous")
    assert [m["content"] for page in back for m in page] == texts[:-1]  # backwards, the same rows once each
    assert len(back) > 2


@pytest.mark.parametrize("page_size, page_max_bytes", [(2000, 1_200), (5, 4 * 1024 * 1024)])
def test_session_pages_keep_sessions_created_in_the_same_instant_both_ways(
    api, tenant, settings, page_size, page_max_bytes
):
    """The session list's cursor settles ties in ``created_at`` by an offset in rows: a page cut
    short by its bytes, or a short last page, must not move it (DRF's own links stepped back from a
    short last page by a whole page size and skipped sessions)."""
    same_instant = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    for i in range(12):
        services.session_create(tenant=tenant, user_id="u1", session_id=f"s{i:02}", metadata={"pad": "p" * 40 * i})
    Session.objects.update(created_at=same_instant)
    settings.PAGE_MAX_BYTES = page_max_bytes

    url = f"/api/v1/sessions/?page_size={page_size}"
    pages = _pages(api, url)
    listed = [s["session_id"] for page in pages for s in page]
    assert sorted(listed) == [f"s{i:02}" for i in range(12)] and len(listed) == 12 and len(pages) > 2

    for _ in pages[:-1]:  # to the last page, then back
        url = json.loads(api.get(url).content)["next"]
    back = _pages(api, json.loads(api.get(url).content)["previous"], "previous")
    assert [s["session_id"] for page in back for s in page] == listed[: -len(pages[-1])]


def test_recent_keeps_the_newest_messages_that_fit_the_budget(api, tenant, settings):
    """``recent`` is one page: past the budget it holds the newest messages that fit (one at
    least), oldest first, instead of every large message asked for."""
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    texts = ["old", "a large one " * 60, "x" * 300, "y" * 300, "newest"]
    services.message_append(session=session, messages=[{"role": "user", "content": t} for t in texts])
    settings.PAGE_MAX_BYTES = 1_000

    body = json.loads(api.get(M, {"recent": 5}).content)
    assert [m["content"] for m in body["results"]] == texts[2:] and body["next"] is None
    only = json.loads(api.get(M, {"recent": 4, "role": "user"}).content)["results"]
    assert [m["content"] for m in json.loads(api.get(M, {"recent": 1}).content)["results"]] == ["newest"]
    assert len(only) == 3
    settings.PAGE_MAX_BYTES = 10
    assert [m["content"] for m in json.loads(api.get(M, {"recent": 5}).content)["results"]] == ["newest"]
