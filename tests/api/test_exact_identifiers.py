"""A user id sent in a request body is the user id stored: never trimmed (a trailing no-break
space makes another person)."""

import pytest

from sessions_app.models import Session

IDS = ["alice\u00a0", " bob", "carol\u2003"]


@pytest.mark.parametrize("user_id", IDS)
def test_a_session_created_for_an_id_with_outer_whitespace_keeps_it(api, tenant, user_id):
    assert api.post("/api/v1/sessions/", {"user_id": user_id, "session_id": "s1"}, format="json").status_code == 201
    assert list(Session.objects.filter(tenant=tenant).values_list("user_id", flat=True)) == [user_id]


@pytest.mark.parametrize("user_id", IDS)
def test_a_langgraph_thread_is_owned_by_the_id_exactly_as_sent(api, tenant, user_id):
    body = {
        "thread_id": "t1",
        "user_id": user_id,
        "default_user_id": "nobody",
        "checkpoint_ns": "",
        "checkpoint_id": "c1",
        "checkpoint": {"type": "json", "data": "e30="},
        "metadata": {},
        "channel_versions": {},
    }
    assert api.post("/api/v1/langgraph/checkpoints/", body, format="json").status_code == 201
    assert list(Session.objects.filter(tenant=tenant).values_list("user_id", flat=True)) == [user_id]
