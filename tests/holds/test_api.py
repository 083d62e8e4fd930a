"""A legal hold answers 409 ``held`` to every API call that would destroy what it covers, and
changes nothing; writes still work; its release lets the same call through. The tables below
classify every write route of the API: a new one fails ``test_every_write_route_is_classified``
until someone says whether it destroys data (and it then gets the hold check and a row here)."""

from __future__ import annotations

import pytest
from django.urls import get_resolver

from agentstate.holds import services as holds
from tests.api.assertions import assert_error
from tests.api.routes import api_routes
from tests.holds.world import ADK, ARTIFACTS, S, build, checkpoint, rows
from tests.quick_loop import first_of_each_kind
from userdata_app.memory.models import MemoryItem

pytestmark = pytest.mark.django_db

# (route name, method) -> (path, body): each destroys rows of u1 (s1, a1, t1, their data).
DESTRUCTIVE = {
    ("session-detail", "delete"): (S, None),
    ("message-pop", "post"): (S + "messages/pop/", {}),
    ("message-rewind", "post"): (S + "messages/rewind/", {"after_seq": 1, "after_round": 1}),
    ("message-clear", "post"): (S + "messages/clear/", {}),
    ("round-detail", "delete"): (S + "rounds/1/", None),
    ("adk-session-detail", "delete"): (ADK + "a1/", None),
    ("langgraph-thread-delete", "post"): ("/api/v1/langgraph/threads/delete/", {"thread_id": "t1"}),
    ("langgraph-prune", "post"): ("/api/v1/langgraph/threads/prune/", {"thread_ids": ["t1"], "strategy": "delete"}),
    ("langgraph-runs-delete", "post"): ("/api/v1/langgraph/runs/delete/", {"run_ids": ["r1"]}),
    ("user-datum", "delete"): ("/api/v1/users/u1/data/email/", None),
    ("adk-artifact-list", "delete"): (ARTIFACTS + "?filename=note.txt&session_id=a1", None),
    ("working-state", "delete"): (S + "working-state/", None),
    ("store-batch", "post"): (
        "/api/v1/store/batch/",
        {"ops": [{"op": "put", "namespace": ["users", "u1", "prefs"], "key": "k", "value": None}]},
    ),
}

# (route name, method) -> why a hold does not refuse it.
NOT_DESTRUCTIVE = {
    ("session-list", "post"): "creates a session",
    ("session-detail", "patch"): "changes metadata: a write",
    ("session-end", "post"): "ends the session; its rows stay (its working state too, while a hold covers it)",
    ("session-fork", "post"): "copies into a new session; an existing id is refused, nothing is replaced",
    ("message-list", "post"): "appends",
    ("round-list", "post"): "appends a round",
    ("round-detail", "put"): "a write (the round's new state)",
    ("checkpoint-list", "post"): "adds a checkpoint",
    ("working-state", "put"): "a write (the working state's new value)",
    ("working-state", "patch"): "a write (keys merged; a null removes a key, as a write of it)",
    ("transition-list", "post"): "records a hand-off",
    ("adk-session-create", "post"): "creates a session",
    ("adk-event-list", "post"): "appends events",
    ("langgraph-checkpoint-list", "post"): "puts a checkpoint",
    ("langgraph-writes", "post"): "puts writes",
    ("langgraph-batch", "post"): "puts checkpoints and writes",
    ("langgraph-thread-copy", "post"): "copies into a thread; rows the target has are kept",
    ("user-datum", "put"): "a write",
    ("adk-artifact-list", "post"): "saves a new version of an artifact",
    ("run-usage-list", "post"): "records a turn's model usage (a write; pops and clears that drop it are held)",
}


def _write_routes() -> set[tuple[str, str]]:
    found = set()
    for regex, pattern in api_routes(get_resolver().url_patterns):
        view = getattr(pattern.callback, "view_class", None)
        if regex.startswith("^api/v1/") and view is not None:
            found |= {(pattern.name, m) for m in ("post", "put", "patch", "delete") if hasattr(view, m)}
    return found


def test_every_write_route_is_classified():
    routes = _write_routes()
    assert not DESTRUCTIVE.keys() & NOT_DESTRUCTIVE.keys()
    assert routes - DESTRUCTIVE.keys() - NOT_DESTRUCTIVE.keys() == set(), "classify the new write routes"
    assert DESTRUCTIVE.keys() | NOT_DESTRUCTIVE.keys() <= routes, "a classified route is gone: drop its row"


def _send(api, method: str, path: str, body):
    return getattr(api, method)(path, body, format="json") if body is not None else getattr(api, method)(path)


def _place(tenant, scope: str):
    where = {"tenant": {}, "person": {"user_id": "u1"}}[scope]
    return holds.legal_hold_place(tenant=tenant, reference="CASE-7", reason="Smith v. Acme, do not show", **where)


HELD_CALLS = [(route, scope) for route in sorted(DESTRUCTIVE) for scope in ("tenant", "person")]


# The quick loop: each method under each scope of hold; every route in the slow set.
@pytest.mark.parametrize(
    "route, scope",
    first_of_each_kind(HELD_CALLS, [f"{r[0]}-{r[1]}-{scope}" for r, scope in HELD_CALLS], lambda c: (c[0][1], c[1])),
)
def test_a_hold_refuses_each_destructive_call_and_its_release_lets_it_through(api, tenant, route, scope):
    build(api)
    hold = _place(tenant, scope)
    method, (path, body) = route[1], DESTRUCTIVE[route]
    before = rows()
    error = assert_error(_send(api, method, path, body), 409, "held")
    assert error["holds"] == ["CASE-7"]
    assert "Smith" not in error["message"]  # the reason stays with staff
    assert rows() == before
    holds.legal_hold_release(hold=hold, reason="settled")
    answer = _send(api, method, path, body)
    assert answer.status_code in (200, 204), answer.content[:300]
    assert rows() != before


def test_a_store_forget_empties_a_memory_and_a_hold_refuses_it(api, tenant):
    """A forget (ADK's delete_memory) keeps the row but destroys its content: refused as a delete is."""
    build(api)
    forget = {"ops": [{"op": "forget", "namespace": ["users", "u1", "prefs"], "key": "k"}]}
    hold = _place(tenant, "person")
    error = assert_error(api.post("/api/v1/store/batch/", forget, format="json"), 409, "held")
    assert error["holds"] == ["CASE-7"]
    assert MemoryItem.objects.get().value == {"a": 1}
    holds.legal_hold_release(hold=hold, reason="settled")
    assert api.post("/api/v1/store/batch/", forget, format="json").json() == {"results": [None]}
    assert MemoryItem.objects.get().value == {"forgotten": True}


def test_a_session_hold_covers_that_session_only(api, tenant):
    build(api)
    s1 = api.get(S).json()
    from sessions_app.models import Session

    pk = Session.objects.get(session_id=s1["session_id"], app_name="").pk
    holds.legal_hold_place(tenant=tenant, user_id="u1", session_pk=pk, reference="CASE-8", reason="r")
    assert_error(api.post(S + "messages/clear/", {}, format="json"), 409, "held")
    assert_error(api.delete(S), 409, "held")
    assert api.delete(ADK + "a1/").status_code == 204  # another session of the same person
    assert api.delete("/api/v1/users/u1/data/email/").status_code == 204  # the person's own data


def test_another_tenants_hold_changes_nothing(api, tenant, other_tenant):
    build(api)
    holds.legal_hold_place(tenant=other_tenant, reference="CASE-9", reason="r")
    assert api.delete(S).status_code == 204


def test_held_data_stays_writable(api, tenant):
    build(api)
    _place(tenant, "person")
    for response in (
        api.post(S + "messages/", {"messages": [{"content": "d"}]}, format="json"),
        api.put(S + "rounds/1/", {"state": {"r": "new"}}, format="json"),
        api.put("/api/v1/users/u1/data/email/", {"value": "new@example.com"}, format="json"),
        api.post(
            "/api/v1/store/batch/",
            {"ops": [{"op": "put", "namespace": ["users", "u1", "prefs"], "key": "k", "value": {"a": 2}}]},
            format="json",
        ),
        api.post("/api/v1/langgraph/checkpoints/", checkpoint("c3"), format="json"),
        api.post(S + "end/", {}, format="json"),
    ):
        assert response.status_code in (200, 201), (response.status_code, response.content[:300])


def test_ending_a_held_session_keeps_its_working_state(api, tenant, django_capture_on_commit_callbacks):
    """A hold keeps a session with everything in it: an end discards the working state only of a
    session no hold covers."""
    build(api)
    _place(tenant, "person")
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(S + "end/", {}, format="json").status_code == 200
    assert rows()["working_state"] == 1
