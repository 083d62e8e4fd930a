"""The hold rule has two forms: the ORM's (``hold_covering``, ``held``) and the written-out
subquery a pop reads beside its newest message. Both give the same hold for every shape of cover."""

from __future__ import annotations

import pytest
from django.db import connection

from agentstate.holds import services as holds
from agentstate.holds.selectors import COVERING_HOLD_SQL, hold_covering

pytestmark = pytest.mark.django_db

ASKED = [("u1", 1), ("u1", 2), ("u2", 1), ("u2", 3)]  # (person, session pk) a pop asks about


def _written_out(tenant, user_id: str, session_pk: int) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(COVERING_HOLD_SQL, {"tenant": tenant.pk, "user_id": user_id, "session_pk": session_pk})
        row = cursor.fetchone()
    return None if row is None else row[0]


def _orm(tenant, user_id: str, session_pk: int) -> str | None:
    hold = hold_covering(tenant=tenant, user_id=user_id, session_pk=session_pk)
    return None if hold is None else hold.reference


@pytest.mark.parametrize(
    "placed",
    [
        [],
        [{}],  # the tenant
        [{"user_id": "u1"}],  # a person
        [{"user_id": "u1", "session_pk": 1}],  # a session
        [{"user_id": "u1", "session_pk": 2}, {"user_id": "u1"}],  # the oldest of two covers first
        [{"user_id": "u2"}, {}, {"user_id": "u1", "session_pk": 1}],
    ],
)
def test_the_written_out_hold_rule_answers_as_the_orm(tenant, other_tenant, placed):
    for n, where in enumerate(placed):
        holds.legal_hold_place(tenant=tenant, reference=f"CASE-{n}", reason="r", **where)
    holds.legal_hold_place(tenant=other_tenant, reference="ELSEWHERE", reason="r")
    released = holds.legal_hold_place(tenant=tenant, user_id="u1", reference="RELEASED", reason="r")
    holds.legal_hold_release(hold=released, reason="settled")
    answers = {asked: _orm(tenant, *asked) for asked in ASKED}
    assert {asked: _written_out(tenant, *asked) for asked in ASKED} == answers
    assert set(answers.values()) <= {None, *(f"CASE-{n}" for n in range(len(placed)))}
    assert any(answers.values()) == bool(placed)
