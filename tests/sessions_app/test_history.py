"""History edits (sessions_app.services.history): pop, rewind, clear, fork, on whichever database
the run uses."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from agentstate import subject_data
from agentstate.exceptions import InvalidInput, PreconditionFailed, SessionAlreadyExists, SessionEnded
from agentstate.streaming import materialized
from agentstate.subjects import PROCESS_STATE
from sessions_app import services
from sessions_app.models import Message, MessagePop, Round, Session
from sessions_app.subject_data import subject_sessions_export
from tests.subjects import process_state_held

pytestmark = pytest.mark.django_db


def _session(tenant, session_id="s1", user_id="u1") -> Session:
    return services.session_create(tenant=tenant, user_id=user_id, session_id=session_id)


def _append(session, *contents):
    return services.message_append(
        session=session, messages=[{"role": "user", "content": c} for c in contents]
    ).messages


def _history(session) -> list[tuple[int, str]]:
    return list(Message.objects.filter(session=session).order_by("seq").values_list("seq", "content"))


def _fresh(session) -> Session:
    return Session.objects.get(pk=session.pk)


def _rounds(session, *states):
    for state in states:
        services.round_save(tenant=session.tenant, user_id=session.user_id, session_id=session.session_id, state=state)


def test_pop_removes_the_newest_message_and_never_reuses_its_seq(tenant):
    session = _session(tenant)
    _append(session, "a", "b", "c")
    popped = services.message_pop(session=session)
    assert (popped["seq"], popped["content"], popped["role"]) == (3, "c", "user")
    assert _history(session) == [(1, "a"), (2, "b")]
    _append(session, "d")
    assert _history(session) == [(1, "a"), (2, "b"), (4, "d")]  # the gap stays
    stored = _fresh(session)
    assert (stored.message_count, stored.last_seq, stored.history_generation) == (3, 4, 1)


def test_pop_of_an_empty_history_is_none_and_changes_nothing(tenant):
    session = _session(tenant)
    assert services.message_pop(session=session) is None
    stored = _fresh(session)
    assert (stored.message_count, stored.last_seq, stored.history_generation) == (0, 0, 0)


def test_a_retried_pop_with_its_key_returns_the_same_message_and_pops_nothing(tenant):
    session = _session(tenant)
    _append(session, "a", "b")
    first = services.message_pop(session=session, idempotency_key="k1")
    again = services.message_pop(session=session, idempotency_key="k1")
    assert first == again and first["content"] == "b"
    assert _history(session) == [(1, "a")]
    assert services.message_pop(session=session, idempotency_key="k2")["content"] == "a"
    assert services.message_pop(session=session, idempotency_key="k3") is None
    _append(session, "c")
    assert services.message_pop(session=session, idempotency_key="k3") is None  # still the first answer
    assert _history(session) == [(3, "c")]


def test_rewind_removes_messages_after_a_seq_and_optionally_rounds(tenant):
    session = _session(tenant)
    _append(session, "a", "b", "c", "d")
    _rounds(session, {"r": 1}, {"r": 2}, {"r": 3})
    edit = services.message_rewind(session=session, after_seq=2, after_round=1)
    assert (edit.removed_messages, edit.removed_rounds) == (2, 2)
    assert _history(session) == [(1, "a"), (2, "b")]
    assert list(Round.objects.filter(session=session).values_list("round_id", flat=True)) == [1]
    assert (edit.session.message_count, edit.session.last_seq, edit.session.history_generation) == (2, 4, 1)
    _rounds(session, {"r": "next"})  # the next automatic round follows the largest remaining
    assert Round.objects.filter(session=session).order_by("-round_id").first().round_id == 2
    assert [m.seq for m in _append(session, "e")] == [5]


def test_rewind_without_after_round_keeps_rounds_and_a_no_op_keeps_the_generation(tenant):
    session = _session(tenant)
    _append(session, "a")
    _rounds(session, {"r": 1}, {"r": 2})
    edit = services.message_rewind(session=session, after_seq=1)
    assert (edit.removed_messages, edit.removed_rounds, edit.session.history_generation) == (0, 0, 0)
    assert Round.objects.filter(session=session).count() == 2


def test_clear_removes_every_message_and_keeps_the_session(tenant):
    session = _session(tenant)
    _append(session, "a", "b")
    _rounds(session, {"r": 1})
    edit = services.message_clear(session=session)
    assert edit.removed_messages == 2 and _history(session) == []
    assert Round.objects.filter(session=session).count() == 1
    assert [m.seq for m in _append(session, "c")] == [3]
    assert _fresh(session).message_count == 1


@pytest.mark.parametrize(
    "edit",
    [
        lambda s, seen: services.message_pop(session=s, expected_last_seq=seen),
        lambda s, seen: services.message_rewind(session=s, after_seq=1, expected_last_seq=seen),
        lambda s, seen: services.message_clear(session=s, expected_last_seq=seen),
        lambda s, seen: services.session_fork(session=s, new_session_id="f", expected_last_seq=seen),
    ],
    ids=["pop", "rewind", "clear", "fork"],
)
def test_an_edit_conditioned_on_an_old_last_seq_changes_nothing(tenant, edit):
    session = _session(tenant)
    _append(session, "a", "b")
    _append(session, "c")  # appended after the caller read seq 2
    before = _fresh(session).updated_at
    with pytest.raises(PreconditionFailed):
        edit(session, 2)
    assert _history(session) == [(1, "a"), (2, "b"), (3, "c")]
    assert _fresh(session).history_generation == 0 and Session.objects.count() == 1
    assert _fresh(session).updated_at == before  # a refused edit is no activity
    edit(session, 3)  # the newest seq it saw: goes through


def test_the_precondition_names_the_newest_stored_message_not_the_counter(tenant):
    session = _session(tenant)
    _append(session, "a", "b")
    services.message_pop(session=session)  # newest is now seq 1; last_seq stays 2
    with pytest.raises(PreconditionFailed):
        services.message_pop(session=session, expected_last_seq=2)
    assert services.message_pop(session=session, expected_last_seq=1)["content"] == "a"
    assert services.message_clear(session=session, expected_last_seq=0).removed_messages == 0


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: services.message_pop(session=s),
        lambda s: services.message_rewind(session=s, after_seq=0),
        lambda s: services.message_clear(session=s),
    ],
    ids=["pop", "rewind", "clear"],
)
def test_an_ended_session_refuses_edits(tenant, edit):
    session = _session(tenant)
    _append(session, "a")
    services.session_end(session=session)
    with pytest.raises(SessionEnded):
        edit(session)
    assert _history(session) == [(1, "a")]


def test_a_pop_retried_after_the_session_ended_still_gets_its_answer(tenant):
    session = _session(tenant)
    _append(session, "a")
    first = services.message_pop(session=session, idempotency_key="k")
    services.session_end(session=session)
    assert services.message_pop(session=session, idempotency_key="k") == first


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"after_seq": -1}, "after_seq"),
        ({"after_seq": "1"}, "after_seq"),
        ({"after_seq": True}, "after_seq"),
        ({"after_seq": 1, "after_round": -1}, "after_round"),
        ({"after_seq": 1, "after_round": 2**31}, "after_round"),
        ({"after_seq": 1, "expected_last_seq": 2**63}, "expected_last_seq"),
    ],
)
def test_bad_rewind_input_is_refused_naming_the_field(tenant, kwargs, field):
    session = _session(tenant)
    _append(session, "a", "b")
    with pytest.raises(InvalidInput) as caught:
        services.message_rewind(session=session, **kwargs)
    assert field in caught.value.fields
    assert len(_history(session)) == 2


def test_fork_copies_up_to_a_message_and_a_round_and_records_its_parent(tenant):
    session = _session(tenant)
    services.session_update(session=session, agent_id="planner", metadata={"k": 1})
    _append(session, "a", "b", "c")
    _rounds(session, {"r": 1}, {"r": 2})
    fork = services.session_fork(session=session, new_session_id="f1", up_to_seq=2, up_to_round=1)
    stored = Session.objects.get(pk=fork.pk)
    assert (stored.user_id, stored.session_id, stored.agent_id, stored.metadata) == ("u1", "f1", "planner", {"k": 1})
    assert (stored.parent_id, stored.fork_origin) == (session.pk, {"session_id": "s1", "seq": 2, "round": 1})
    assert _history(stored) == [(1, "a"), (2, "b")]
    assert list(Round.objects.filter(session=stored).values_list("round_id", "state")) == [(1, {"r": 1})]
    assert (stored.message_count, stored.last_seq, stored.last_round_id) == (2, 2, 1)
    assert [m.seq for m in _append(stored, "x")] == [3]  # the fork goes on from the fork point
    assert _history(session) == [(1, "a"), (2, "b"), (3, "c")]  # the parent is untouched


def test_fork_defaults_to_everything_a_new_uuid_and_works_on_an_ended_session(tenant):
    session = _session(tenant)
    _append(session, "a", "b")
    services.message_pop(session=session)
    services.session_end(session=session)
    fork = services.session_fork(session=session)
    assert len(fork.session_id) == 36 and fork.ended_at is None
    assert _history(fork) == [(1, "a")] and fork.fork_origin["seq"] == 2


def test_fork_to_an_existing_session_id_is_a_conflict_and_copies_nothing(tenant):
    session = _session(tenant)
    _session(tenant, session_id="taken")
    _append(session, "a")
    with pytest.raises(SessionAlreadyExists):
        services.session_fork(session=session, new_session_id="taken")
    assert Message.objects.count() == 1


def test_fork_runs_a_fixed_number_of_statements_whatever_the_size(tenant):
    counts = []
    for size in (1, 300):
        session = _session(tenant, session_id=f"src{size}")
        for start in range(0, size, 100):
            _append(session, *[f"m{i}" for i in range(start, min(size, start + 100))])
        _rounds(session, {"r": 1})
        with CaptureQueriesContext(connection) as queries:
            fork = services.session_fork(session=session, new_session_id=f"fork{size}")
        counts.append(len(queries))
        assert fork.message_count == size
    assert counts[0] == counts[1]


def test_erasure_and_export_cover_forks_and_kept_pops(tenant):

    session = _session(tenant)
    _append(session, "a", "b")
    services.message_pop(session=session, idempotency_key="k")
    fork = services.session_fork(session=session, new_session_id="f1")
    other = _session(tenant, user_id="u2")
    _append(other, "theirs")
    services.message_pop(session=other, idempotency_key="k")
    exported = {s["session_id"]: s for s in materialized(subject_sessions_export(tenant=tenant, user_id="u1"))}
    assert exported["f1"]["forked_from_session_id"] == "s1" and [m["content"] for m in exported["f1"]["messages"]] == [
        "a"
    ]
    assert [m["content"] for m in exported["s1"]["popped_messages"]] == ["b"]
    assert process_state_held(tenant=tenant, user_id="u1")["message_pops"] == 1
    with transaction.atomic():
        counts = subject_data.subject_erase(tenant=tenant, user_id="u1", kinds=[PROCESS_STATE])
    assert counts["sessions"] == 2 and counts["messages"] == 2 and counts["message_pops"] == 1
    assert not Session.objects.filter(pk__in=[session.pk, fork.pk]).exists()
    assert list(MessagePop.objects.values_list("session_id", flat=True)) == [other.pk]
    assert Session.objects.get(pk=other.pk).message_count == 0


def test_deleting_a_parent_keeps_the_fork_and_where_it_came_from(tenant):
    session = _session(tenant)
    _append(session, "a")
    fork = services.session_fork(session=session, new_session_id="f1")
    services.session_delete(session=session)
    stored = Session.objects.get(pk=fork.pk)
    assert stored.parent_id is None and stored.fork_origin == {"session_id": "s1", "seq": 1, "round": 0}


def test_deleting_a_tenant_deletes_its_forks_messages_and_rounds(tenant):
    """A message's and a round's tenant column carries no database constraint (the session's key
    proves the tenant); deleting the tenant must still leave none of them behind."""
    session = _session(tenant)
    _append(session, "a", "b")
    _rounds(session, {"step": 1})
    services.session_fork(session=session, new_session_id="f1")
    tenant.delete()
    assert not Message.objects.exists() and not Round.objects.exists() and not Session.objects.exists()
