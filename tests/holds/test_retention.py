"""Retention, the memories' TTL sweep and a sweep racing a hold: what a legal hold covers stays,
each sweep reports it, and a release lets the next run take it. SQLite and PostgreSQL."""

from __future__ import annotations

import io
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from agentstate.holds import services as holds
from sessions_app import services
from sessions_app.models import Message, Round, Session
from userdata_app.memory.models import MemoryItem
from userdata_app.memory.services import memory_batch, memory_items_expire

pytestmark = pytest.mark.django_db

OLD = timezone.now() - timedelta(days=400)


def _old_session(tenant, session_id: str, *, user_id: str = "u1", ended: bool = True) -> Session:
    session = services.session_create(tenant=tenant, user_id=user_id, session_id=session_id)
    services.message_append(session=session, messages=[{"content": c} for c in "ab"])
    for state in ({"r": 1}, {"r": 2}):
        services.round_save(tenant=tenant, user_id=user_id, session_id=session_id, state=state)
    Message.objects.filter(session=session).update(created_at=OLD)
    Session.objects.filter(pk=session.pk).update(updated_at=OLD, ended_at=OLD if ended else None)
    return session


POLICIES = {
    "ended_sessions_deleted": {"delete_ended_after_days": 30},
    "idle_sessions_ended": {"end_idle_after_days": 30},
    "rounds_deleted": {"keep_latest_rounds": 1},
    "messages_dropped": {"drop_messages_after_days": 30},
}


def _state(session: Session):
    row = Session.objects.filter(pk=session.pk).values_list("ended_at", flat=True).first()
    return (
        Session.objects.filter(pk=session.pk).exists(),
        row,
        Message.objects.filter(session_id=session.pk).count(),
        Round.objects.filter(session_id=session.pk).count(),
    )


@pytest.mark.parametrize("category", sorted(POLICIES))
@pytest.mark.parametrize("scope", ["tenant", "person", "session"])
def test_each_rule_skips_held_sessions_reports_them_and_takes_them_after_release(tenant, other_tenant, category, scope):
    for each in (tenant, other_tenant):
        services.retention_policy_save(tenant=each, **POLICIES[category])
    held = _old_session(tenant, "held", ended=category != "idle_sessions_ended")
    where = {"tenant": {}, "person": {"user_id": "u1"}, "session": {"user_id": "u1", "session_pk": held.pk}}[scope]
    hold = holds.legal_hold_place(tenant=tenant, reference="CASE-1", reason="r", **where)
    free = _old_session(other_tenant, "free", ended=category != "idle_sessions_ended")
    kept, swept = _state(held), _state(free)

    run = services.retention_apply()

    assert _state(held) == kept
    assert _state(free) != swept  # the rule does act on what is not held
    assert run.held == {"acme": {category: 1}}
    holds.legal_hold_release(hold=hold, reason="case closed")
    assert services.retention_apply().held == {}
    assert _state(held) != kept


def test_the_command_says_what_it_skipped_because_held(tenant):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=30)
    _old_session(tenant, "held")
    holds.legal_hold_place(tenant=tenant, user_id="u1", reference="CASE-1", reason="r")
    out = io.StringIO()
    call_command("apply_retention", stdout=out)
    assert "acme: ended_sessions_deleted skipped 1 sessions because held (legal hold)" in out.getvalue()
    assert Session.objects.count() == 1


def _memory(tenant, user_id: str) -> None:
    memory_batch(
        tenant=tenant,
        ops=[{"op": "put", "namespace": ["users", user_id, "notes"], "key": "k", "value": {"v": 1}, "ttl": 1}],
    )
    MemoryItem.objects.filter(user_id=user_id).update(expires_at=timezone.now() - timedelta(minutes=1))


def test_the_memory_ttl_sweep_keeps_held_items_and_says_so(tenant):
    _memory(tenant, "u1")
    _memory(tenant, "u2")
    hold = holds.legal_hold_place(tenant=tenant, user_id="u1", reference="CASE-1", reason="r")
    out = io.StringIO()
    call_command("expire_memories", stdout=out)
    assert (
        out.getvalue() == "Deleted 1 expired memory items.\nSkipped 1 expired memory items because held (legal hold).\n"
    )
    assert list(MemoryItem.objects.values_list("user_id", flat=True)) == ["u1"]
    holds.legal_hold_release(hold=hold, reason="case closed")
    assert memory_items_expire() == 1


# --- A sweep racing a hold's placement (PostgreSQL: real concurrency) ----------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
@pytest.mark.parametrize("sweep", ["retention", "delete"])
def test_a_sweep_that_starts_while_a_hold_is_being_placed_waits_and_spares_what_it_covers(postgres_only, tenant, sweep):
    """The hold is placed (lock taken, row inserted) and not yet committed when the sweep starts on
    another connection: the sweep must wait for the placement's commit, then see the hold. Without
    the tenant's hold lock the sweep reads before the commit and deletes the session."""
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=30)
    held = _old_session(tenant, "held")
    placed, commit, errors, outcome = threading.Event(), threading.Event(), [], {}

    def place():
        try:
            with transaction.atomic():
                holds.legal_hold_place(tenant=tenant, user_id="u1", reference="CASE-1", reason="r")
                placed.set()
                assert commit.wait(timeout=30)
        except BaseException as exc:
            errors.append(exc)
            placed.set()
        finally:
            connection.close()

    def delete():
        try:
            if sweep == "retention":
                outcome["run"] = services.retention_apply()
            else:
                services.session_delete(session=held)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            connection.close()

    placer = threading.Thread(target=place)
    placer.start()
    assert placed.wait(timeout=30) and not errors
    sweeper = threading.Thread(target=delete)
    sweeper.start()
    sweeper.join(timeout=1)
    waited = sweeper.is_alive()  # for the placement's lock, rather than deleting
    commit.set()
    placer.join(timeout=30)
    sweeper.join(timeout=30)
    assert not errors and not sweeper.is_alive()
    assert waited
    assert Session.objects.filter(pk=held.pk).exists()
    if sweep == "retention":
        assert outcome["run"].held == {"acme": {"ended_sessions_deleted": 1}}
    else:
        assert type(outcome["error"]).__name__ == "Held"
