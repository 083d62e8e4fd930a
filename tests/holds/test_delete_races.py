"""A delete in flight racing a hold's placement (PostgreSQL: real row locks and real concurrency).

Another transaction holds a row the API call needs locked (``SELECT … FOR UPDATE``): the row it
deletes, which it waits on after its hold check, or the session's row, which a pop waits on before
it checks; a legal hold on the person is placed meanwhile from another thread; then the row lock
goes. Either the placement waited until the delete committed (the delete came first: fine) or the
delete is refused: the row is never gone after the hold was acknowledged."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from agentstate.holds import services as holds
from sessions_app.models import Message, Session
from tests.holds.world import S, build
from userdata_app.memory.models import MemoryItem
from userdata_app.models import UserDatum

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

FORGET = {"ops": [{"op": "forget", "namespace": ["users", "u1", "prefs"], "key": "k"}]}

NEWEST = (Message, {"session__session_id": "s1", "seq": 3})  # what a pop of s1 deletes
S1 = (Session, {"session_id": "s1"})


def _pop(api):
    return api.post(S + "messages/pop/")


# What the call deletes (a model and the filter of its row), the call, and the row it waits on.
DELETES = {
    "user datum": ((UserDatum, {}), lambda api: api.delete("/api/v1/users/u1/data/email/"), (UserDatum, {})),
    "session": (S1, lambda api: api.delete(S), S1),
    "memory forget": (
        (MemoryItem, {}),
        lambda api: api.post("/api/v1/store/batch/", FORGET, format="json"),
        (MemoryItem, {}),
    ),
    "message pop, waiting on the message": (NEWEST, _pop, NEWEST),
    "message pop, waiting on the session": (NEWEST, _pop, S1),
}


def _still(model, pk) -> bool:
    """Whether the row is still there and (a memory) still holds its value."""
    row = model.objects.filter(pk=pk).first()
    return row is not None and getattr(row, "value", None) != {"forgotten": True}


def _waits(thread: threading.Thread, *, seconds: float = 1.0) -> bool:
    thread.join(timeout=seconds)
    return thread.is_alive()


@pytest.mark.parametrize("what", sorted(DELETES))
def test_a_delete_waiting_on_a_row_lock_never_deletes_after_a_hold_is_acknowledged(
    postgres_only, tenant, agent_key, what
):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Api-Key {agent_key}")
    build(api)
    (model, row), call, (locked_model, locked_row) = DELETES[what]
    pk = model.objects.filter(**row).get().pk
    locked, release, outcome = threading.Event(), threading.Event(), {}

    def hold_the_row() -> None:
        try:
            with transaction.atomic():
                list(locked_model.objects.select_for_update().filter(**locked_row))
                locked.set()
                assert release.wait(timeout=60)
        finally:
            locked.set()
            connection.close()

    def delete() -> None:
        try:
            outcome["delete"] = call(api).status_code
        finally:
            connection.close()

    def place() -> None:
        try:
            holds.legal_hold_place(tenant=tenant, user_id="u1", reference="CASE-1", reason="r")
            outcome["placed"] = True
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    assert locked.wait(timeout=30)
    deleter = threading.Thread(target=delete)
    deleter.start()
    assert _waits(deleter), "the delete did not wait on the row lock"
    placer = threading.Thread(target=place)
    placer.start()
    acknowledged_first = not _waits(placer)  # placed while the delete is still pending
    release.set()
    for thread in (holder, deleter, placer):
        thread.join(timeout=60)
        assert not thread.is_alive()

    assert outcome.get("placed") and outcome["delete"] in (200, 204, 409), outcome
    if acknowledged_first:
        assert _still(model, pk), "deleted after the hold was acknowledged"
        assert outcome["delete"] == 409
    else:  # the placement waited for the delete's commit: the delete came first
        assert outcome["delete"] in (200, 204)
