"""Sessions over HTTP: create, get, update with ETag/If-Match, end, delete, restore, list + filters."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app import services
from sessions_app.models import Message, Session
from tests.api.assertions import assert_error, streamed

pytestmark = pytest.mark.django_db
S = "/api/v1/users/u1/sessions/s1/"


@pytest.fixture
def session(tenant):
    return services.session_create(tenant=tenant, user_id="u1", session_id="s1", agent_id="a1", metadata={"k": 1})


def test_create_returns_the_session_with_etag(api):
    response = api.post(
        "/api/v1/sessions/",
        {"user_id": "u1", "session_id": "  s1 ", "agent_id": "a", "metadata": {"x": 1}},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert body["session_id"] == "s1" and body["metadata"] == {"x": 1} and body["message_count"] == 0
    assert set(body) == {
        "user_id",
        "session_id",
        "agent_id",
        "workspace_id",
        "metadata",
        "created_at",
        "updated_at",
        "ended_at",
        "ended_by_retention",
        "message_count",
        "last_seq",
        "history_generation",
        "forked_from",
        "version",
    }
    assert (body["last_seq"], body["history_generation"], body["forked_from"]) == (0, 0, None)
    assert body["ended_by_retention"] is False
    assert response["ETag"] == f'"{body["version"]}"'


def test_create_without_id_gets_a_uuid(api):
    body = api.post("/api/v1/sessions/", {"user_id": "u1"}, format="json").json()
    assert len(body["session_id"]) == 36


def test_create_existing_is_409(api, session):
    assert_error(
        api.post("/api/v1/sessions/", {"user_id": "u1", "session_id": "s1"}, format="json"), 409, "session_exists"
    )


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "user_id"),
        ({"user_id": ""}, "user_id"),
        ({"user_id": "a/b"}, "user_id"),
        ({"user_id": "x" * 129}, "user_id"),
        ({"user_id": "u", "metadata": [1]}, "metadata"),
        ({"user_id": "u", "metadata": {"a": "nul\x00"}}, "metadata"),
        ({"user_id": "u", "agent_id": ["x"]}, "agent_id"),
        ({"user_id": "u", "sesion_id": "typo"}, "sesion_id"),
    ],
)
def test_create_validation_names_the_field(api, body, field):
    assert_error(api.post("/api/v1/sessions/", body, format="json"), 400, "invalid", field=field)
    assert not Session.objects.exists()


def test_get_404_for_missing(api):
    assert_error(api.get("/api/v1/users/u1/sessions/nope/"), 404, "not_found")


def test_get_and_patch_with_if_match(api, session):
    got = api.get(S)
    assert got.status_code == 200 and got.json()["agent_id"] == "a1"
    etag = got["ETag"]
    patched = api.patch(S, {"metadata": {"k": 2}, "workspace_id": "w"}, format="json", HTTP_IF_MATCH=etag)
    assert patched.status_code == 200
    assert patched.json()["metadata"] == {"k": 2} and patched["ETag"] != etag
    # a second writer still holding the old ETag loses, and changes nothing
    assert_error(api.patch(S, {"metadata": {"k": 3}}, format="json", HTTP_IF_MATCH=etag), 412, "precondition_failed")
    assert Session.objects.get().metadata == {"k": 2}


def test_an_empty_patch_keeps_the_etag_so_other_writers_are_not_refused(api, session):
    etag = api.get(S)["ETag"]
    assert api.patch(S, {}, format="json", HTTP_IF_MATCH=etag)["ETag"] == etag
    assert api.patch(S, {"agent_id": "b"}, format="json", HTTP_IF_MATCH=etag).status_code == 200
    assert_error(api.patch(S, {}, format="json", HTTP_IF_MATCH=etag), 412, "precondition_failed")


def test_end_and_delete_with_a_stale_if_match_are_412_and_change_nothing(api, session):
    stale = api.get(S)["ETag"]
    current = api.patch(S, {"agent_id": "b"}, format="json")["ETag"]
    assert_error(api.post(S + "end/", HTTP_IF_MATCH=stale), 412, "precondition_failed")
    assert_error(api.delete(S, HTTP_IF_MATCH=stale), 412, "precondition_failed")
    assert Session.objects.get().ended_at is None
    ended = api.post(S + "end/", HTTP_IF_MATCH=current)
    assert ended.status_code == 200 and ended.json()["ended_at"] is not None
    # a retried end (its answer lost) succeeds although the end itself moved the version on
    assert api.post(S + "end/", HTTP_IF_MATCH=current).json()["ended_at"] == ended.json()["ended_at"]
    assert api.delete(S, HTTP_IF_MATCH=ended["ETag"]).status_code == 204
    assert not Session.objects.exists()


@pytest.mark.parametrize("header", ['W/"1"', "1", '"1", "2"', "garbage"])
def test_malformed_if_match_is_412(api, session, header):
    assert_error(api.patch(S, {"agent_id": "b"}, format="json", HTTP_IF_MATCH=header), 412, "precondition_failed")


def test_patch_star_and_without_if_match(api, session):
    assert api.patch(S, {"agent_id": "b"}, format="json", HTTP_IF_MATCH="*").status_code == 200
    assert api.patch(S, {"agent_id": "c"}, format="json").json()["agent_id"] == "c"


def test_patch_validation(api, session):
    assert_error(api.patch(S, {"user_id": "other"}, format="json"), 400, "invalid", field="user_id")
    assert_error(api.patch(S, {"metadata": "x"}, format="json"), 400, "invalid", field="metadata")


def test_end_then_writes_are_409_and_reads_work(api, session):
    response = api.post(S + "end/")
    assert response.status_code == 200 and response.json()["ended_at"] is not None
    assert_error(api.post(S + "messages/", {"content": "late"}, format="json"), 409, "session_ended")
    assert_error(api.post(S + "rounds/", {"state": {}}, format="json"), 409, "session_ended")
    assert api.get(S).status_code == 200


def test_delete_removes_everything_of_the_session(api, session):
    services.message_append(session=session, messages=[{"content": "hi"}])
    assert api.delete(S).status_code == 204
    assert not Session.objects.exists() and not Message.objects.exists()
    assert_error(api.delete(S), 404, "not_found")


def test_restore(api, session, settings):
    """Streamed, its checkpoints read a batch of about ``PAGE_MAX_BYTES`` at a time: a session's
    checkpoints of 5 MiB each were once built into one answer."""
    services.working_state_patch(session=session, changes={"step": 1})
    services.checkpoint_create(session=session, label="cp")
    services.checkpoint_create(session=session, label="large", state={"notes": "n" * 2_000})
    settings.PAGE_MAX_BYTES = 1_000
    response = api.get(S + "restore/")
    assert response.streaming
    body = json.loads(streamed(response))
    assert body["session"]["session_id"] == "s1"
    assert [c["state"] for c in body["checkpoints"]] == [{"step": 1}, {"notes": "n" * 2_000}]
    assert [c["label"] for c in body["checkpoints"]] == ["cp", "large"]
    assert body["working_state"] == {"step": 1}
    assert body["session"] == json.loads(api.get(S).content)  # as the session's own answer writes it


# --- list -----------------------------------------------------------------------------------


@pytest.fixture
def many(tenant):
    for i in range(5):
        services.session_create(
            tenant=tenant,
            user_id="u1" if i % 2 == 0 else "u2",
            session_id=f"s{i}",
            agent_id=f"a{i % 2}",
            workspace_id="w" if i < 2 else "",
        )
    services.session_end(session=Session.objects.get(session_id="s0"))


def _ids(response):
    assert response.status_code == 200, response.content
    return [s["session_id"] for s in response.json()["results"]]


def test_list_pages_through_everything_without_messages(api, many):
    first = api.get("/api/v1/sessions/?page_size=2").json()
    assert len(first["results"]) == 2 and first["next"] and "messages" not in first["results"][0]
    seen = [s["session_id"] for s in first["results"]]
    url = first["next"]
    while url:
        page = api.get(url).json()
        seen += [s["session_id"] for s in page["results"]]
        url = page["next"]
    assert seen == ["s0", "s1", "s2", "s3", "s4"]


def test_list_filters(api, many):
    assert _ids(api.get("/api/v1/sessions/?user_id=u2")) == ["s1", "s3"]
    assert _ids(api.get("/api/v1/sessions/?agent_id=a0")) == ["s0", "s2", "s4"]
    assert _ids(api.get("/api/v1/sessions/?workspace_id=w")) == ["s0", "s1"]
    assert _ids(api.get("/api/v1/sessions/?user_id=u1&ended=true")) == ["s0"]
    assert _ids(api.get("/api/v1/sessions/?user_id=u1&ended=false")) == ["s2", "s4"]
    future = (timezone.now() + timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert _ids(api.get("/api/v1/sessions/", {"created_after": future})) == []
    assert len(_ids(api.get("/api/v1/sessions/", {"created_before": future}))) == 5
    assert _ids(api.get("/api/v1/sessions/", {"user_id": "u1", "updated_after": future})) == []


@pytest.mark.parametrize(
    "query, field",
    [
        ({"ended": "true"}, "ended"),  # no index serves it tenant-wide
        ({"updated_after": "2020-01-01T00:00:00Z"}, "updated_after"),
        ({"created_after": "not a date"}, "created_after"),
        ({"user_id": "nul\x00"}, "user_id"),
        ({"cursor": "cD1ub3QtYS1kYXRl"}, "cursor"),  # base64 of "p=not-a-date": a forged position
        ({"cursor": "cD0lMDA="}, "cursor"),  # "p=%00": a NUL position
    ],
)
def test_list_bad_filters_are_400(api, many, query, field):
    assert_error(api.get("/api/v1/sessions/", query), 400, "invalid", field=field)


def test_page_size_defaults_to_100_and_goes_up_to_2000(api, tenant):
    Session.objects.bulk_create(Session(tenant=tenant, user_id="u", session_id=f"s{i}") for i in range(2010))
    assert len(api.get("/api/v1/sessions/").json()["results"]) == 100
    assert len(api.get("/api/v1/sessions/?page_size=2000").json()["results"]) == 2000
    for bad in ("2001", "0", "-1", "junk", "9" * 5000):
        assert_error(api.get(f"/api/v1/sessions/?page_size={bad}"), 400, "invalid", field="page_size")


def test_a_date_filter_with_an_offset_postgresql_refuses_is_read_in_utc(api):
    """ISO 8601 allows offsets up to 23:59, PostgreSQL up to 15:59 (found by the schema fuzz)."""
    response = api.get(
        "/api/v1/sessions/",
        {"created_after": "0503-02-16T13:13:33+23:21", "created_before": "2587-09-17T08:17:57-08:07"},
    )
    assert response.status_code == 200
    assert api.get("/api/v1/sessions/", {"created_after": "0001-01-01T00:00:00+23:00"}).status_code == 400
