"""The read rules of process state (sessions_app.selectors)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agentstate.exceptions import InvalidInput, NotFound
from sessions_app import selectors, services
from sessions_app.models import Checkpoint, Round, Session

pytestmark = pytest.mark.django_db


def _session(tenant, session_id="s1", user_id="u1", **fields) -> Session:
    return services.session_create(tenant=tenant, user_id=user_id, session_id=session_id, **fields)


def _ids(sessions) -> list[str]:
    return [s.session_id for s in sessions]


def _append(session, *specs):
    """specs: (role, content) pairs."""
    services.message_append(session=session, messages=[{"role": r, "content": c} for r, c in specs])


# --- Sessions ---------------------------------------------------------------------------------


def test_get_finds_a_session_only_by_its_full_identity(tenant, other_tenant):
    session = _session(tenant)
    assert selectors.session_get(tenant=tenant, user_id="u1", session_id="s1").pk == session.pk
    for tenant_, user_id in ((other_tenant, "u1"), (tenant, "u2")):
        with pytest.raises(NotFound):
            selectors.session_get(tenant=tenant_, user_id=user_id, session_id="s1")


def test_list_orders_by_created_at_then_id(tenant):
    now = timezone.now()
    for session_id, age in (("old", 3), ("tie-a", 1), ("tie-b", 1), ("new", 0), ("oldest", 9)):
        session = _session(tenant, session_id)
        Session.objects.filter(pk=session.pk).update(created_at=now - timedelta(hours=age))
    assert _ids(selectors.session_list(tenant=tenant)) == ["oldest", "old", "tie-a", "tie-b", "new"]


def test_list_filters_by_user_workspace_agent_and_ended(tenant, other_tenant):
    _session(tenant, "a", agent_id="planner", workspace_id="w1")
    _session(tenant, "b", agent_id="coder", workspace_id="w1")
    services.session_end(session=_session(tenant, "c", agent_id="planner", workspace_id="w2"))
    _session(tenant, "d", user_id="u2", agent_id="planner", workspace_id="w1")
    _session(other_tenant, "x", agent_id="planner", workspace_id="w1")

    assert _ids(selectors.session_list(tenant=tenant)) == ["a", "b", "c", "d"]
    assert _ids(selectors.session_list(tenant=tenant, user_id="u1")) == ["a", "b", "c"]
    assert _ids(selectors.session_list(tenant=tenant, user_id="u2")) == ["d"]
    assert _ids(selectors.session_list(tenant=tenant, workspace_id="w1")) == ["a", "b", "d"]
    assert _ids(selectors.session_list(tenant=tenant, agent_id="planner")) == ["a", "c", "d"]
    assert _ids(selectors.session_list(tenant=tenant, ended=True)) == ["c"]
    assert _ids(selectors.session_list(tenant=tenant, ended=False)) == ["a", "b", "d"]
    assert _ids(selectors.session_list(tenant=tenant, user_id="u1", agent_id="planner", ended=False)) == ["a"]
    assert _ids(selectors.session_list(tenant=other_tenant)) == ["x"]


def test_list_filters_by_a_date_range_from_inclusive_to_exclusive(tenant):
    base = timezone.now().replace(microsecond=0) - timedelta(days=10)
    for day in range(5):
        session = _session(tenant, f"day{day}")
        Session.objects.filter(pk=session.pk).update(created_at=base + timedelta(days=day))
        Session.objects.filter(pk=session.pk).update(updated_at=base + timedelta(days=day, hours=12))
    in_range = selectors.session_list(
        tenant=tenant, created_after=base + timedelta(days=1), created_before=base + timedelta(days=3)
    )
    assert _ids(in_range) == ["day1", "day2"]
    assert _ids(selectors.session_list(tenant=tenant, updated_after=base + timedelta(days=3))) == ["day3", "day4"]
    assert _ids(selectors.session_list(tenant=tenant, updated_before=base + timedelta(days=1))) == ["day0"]


def test_list_does_not_load_messages(tenant, django_assert_num_queries):
    for n in range(3):
        session = _session(tenant, f"s{n}")
        _append(session, *[("user", "x" * 1000)] * 20)
    with django_assert_num_queries(1) as captured:
        sessions = list(selectors.session_list(tenant=tenant, user_id="u1"))
        assert [s.message_count for s in sessions] == [20, 20, 20]
    assert "sessions_app_message" not in captured.captured_queries[0]["sql"]


# --- Messages ---------------------------------------------------------------------------------


@pytest.fixture
def conversation(tenant):
    session = _session(tenant)
    _append(session, ("system", "s"), ("user", "u1"), ("assistant", "a1"))
    _append(session, ("user", "u2"), ("assistant", "a2"), ("user", "u3"))
    return session


def test_history_is_in_sequence_order(conversation):
    assert [m.content for m in selectors.message_list(session=conversation)] == ["s", "u1", "a1", "u2", "a2", "u3"]


def test_history_after_a_sequence_number(conversation):
    assert [m.seq for m in selectors.message_list(session=conversation, after_seq=4)] == [5, 6]
    assert [m.seq for m in selectors.message_list(session=conversation, after_seq=0)] == [1, 2, 3, 4, 5, 6]
    assert list(selectors.message_list(session=conversation, after_seq=6)) == []


def test_history_of_one_role(conversation):
    assert [m.content for m in selectors.message_list(session=conversation, role="user")] == ["u1", "u2", "u3"]
    assert [m.seq for m in selectors.message_list(session=conversation, role="user", after_seq=2)] == [4, 6]


def test_the_most_recent_messages_oldest_first(conversation):
    assert [m.seq for m in selectors.message_recent(session=conversation, limit=2)] == [5, 6]
    assert [m.seq for m in selectors.message_recent(session=conversation, limit=100)] == [1, 2, 3, 4, 5, 6]
    assert [m.content for m in selectors.message_recent(session=conversation, limit=2, role="assistant")] == [
        "a1",
        "a2",
    ]
    assert selectors.message_recent(session=conversation, limit=0) == []


@pytest.mark.parametrize("limit", [-1, 501, 10**20, True, "5"])
def test_a_recent_limit_outside_0_to_500_is_invalid_input(conversation, limit):
    """Bounded for every caller, not only the API: 10**20 would reach the database as a LIMIT it
    cannot hold."""
    with pytest.raises(InvalidInput):
        selectors.message_recent(session=conversation, limit=limit)
    assert len(selectors.message_recent(session=conversation, limit=500)) == 6


def test_history_is_per_session(tenant, conversation):
    other = _session(tenant, "s2")
    _append(other, ("user", "elsewhere"))
    assert [m.content for m in selectors.message_list(session=other)] == ["elsewhere"]
    assert len(selectors.message_list(session=conversation)) == 6


# --- Rounds -----------------------------------------------------------------------------------


def _save(tenant, state, **kwargs):
    return services.round_save(tenant=tenant, user_id="u1", state=state, **kwargs)


def test_export_of_nothing_is_none(tenant):
    assert selectors.round_export(tenant=tenant, user_id="u1") is None
    _save(tenant, {"v": 1})
    assert selectors.round_export(tenant=tenant, user_id="u1", round_id=2) is None
    assert selectors.round_export(tenant=tenant, user_id="u2") is None
    assert selectors.round_export(tenant=tenant, user_id="u1", session_id="other") is None


def test_latest_is_the_largest_round_id_not_the_last_written(tenant):
    _save(tenant, {"v": 10}, round_id=10)
    _save(tenant, {"v": 3}, round_id=3)
    assert selectors.round_export(tenant=tenant, user_id="u1") == {"v": 10}
    assert selectors.round_get(tenant=tenant, user_id="u1").round_id == 10
    _save(tenant, {"v": "overwritten"}, round_id=3)
    assert selectors.round_export(tenant=tenant, user_id="u1") == {"v": 10}


def test_export_of_a_given_round(tenant):
    _save(tenant, {"v": 1})
    _save(tenant, {"v": 2})
    assert selectors.round_export(tenant=tenant, user_id="u1", round_id=1) == {"v": 1}


def test_export_without_session_id_reads_the_default_session(tenant):
    _save(tenant, {"v": "default"})
    _save(tenant, {"v": "named"}, session_id="named")
    assert selectors.round_export(tenant=tenant, user_id="u1") == {"v": "default"}
    assert selectors.round_export(tenant=tenant, user_id="u1", session_id="") == {"v": "default"}
    assert selectors.round_export(tenant=tenant, user_id="u1", session_id="named") == {"v": "named"}


def test_rounds_of_another_tenant_are_invisible(tenant, other_tenant):
    _save(tenant, {"v": 1})
    assert selectors.round_export(tenant=other_tenant, user_id="u1") is None
    with pytest.raises(NotFound):
        selectors.round_get(tenant=other_tenant, user_id="u1", round_id=1)


def test_round_list_gives_ids_and_times_in_id_order(tenant):
    for round_id in (7, 2, 30):
        _save(tenant, {"big": "x" * 100}, round_id=round_id)
    session = Session.objects.get()
    rounds = list(selectors.round_list(session=session))
    assert [r.round_id for r in rounds] == [2, 7, 30]
    assert all(r.created_at and r.updated_at for r in rounds)
    assert all("state" in r.get_deferred_fields() for r in rounds)


# --- Checkpoints, restore, transitions --------------------------------------------------------


def test_latest_checkpoint_by_label_with_ties_broken_by_insertion_order(tenant):
    session = _session(tenant)
    same_time = timezone.now()
    for n in range(3):
        checkpoint = services.checkpoint_create(session=session, label="step", state={"n": n})
        Checkpoint.objects.filter(pk=checkpoint.pk).update(created_at=same_time)
    services.checkpoint_create(session=session, label="other", state={"n": "other"})
    assert selectors.checkpoint_latest(session=session, label="step").state == {"n": 2}
    with pytest.raises(NotFound):
        selectors.checkpoint_latest(session=session, label="missing")


def test_checkpoint_list_gives_id_label_and_time_in_order(tenant):
    session = _session(tenant)
    created = [services.checkpoint_create(session=session, label=label, state={}) for label in ("b", "a", "b")]
    listed = list(selectors.checkpoint_list(session=session))
    assert [(c.pk, c.label) for c in listed] == [(c.pk, c.label) for c in created]
    assert all(c.created_at for c in listed)


def test_checkpoints_are_per_session(tenant):
    a, b = _session(tenant, "a"), _session(tenant, "b")
    services.checkpoint_create(session=a, label="cp", state={"s": "a"})
    with pytest.raises(NotFound):
        selectors.checkpoint_latest(session=b, label="cp")


def test_restore_after_end_gives_the_checkpoints_and_an_empty_working_state(tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"current_subtask": "draft", "scratch": 1})
    services.checkpoint_create(session=session, label="subtask_complete", include_keys=["current_subtask"])
    services.session_end(session=session)

    restored = selectors.session_restore(tenant=tenant, user_id="u1", session_id="s1")

    assert restored.session.pk == session.pk and restored.session.ended_at is not None
    assert [(c.label, c.state) for c in restored.checkpoints] == [("subtask_complete", {"current_subtask": "draft"})]
    assert restored.working_state == {}


def test_restore_of_a_live_session_includes_its_working_state(tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"k": "v"})
    assert selectors.session_restore(tenant=tenant, user_id="u1", session_id="s1").working_state == {"k": "v"}


def test_restore_of_a_missing_session_is_not_found(tenant):
    with pytest.raises(NotFound):
        selectors.session_restore(tenant=tenant, user_id="u1", session_id="nope")


def test_transitions_are_listed_in_the_order_recorded(tenant):
    session = _session(tenant)
    for from_agent, to_agent in (("", "triage"), ("triage", "billing"), ("billing", "triage")):
        services.transition_record(session=session, from_agent=from_agent, to_agent=to_agent)
    assert [(t.from_agent, t.to_agent) for t in selectors.transition_list(session=session)] == [
        ("", "triage"),
        ("triage", "billing"),
        ("billing", "triage"),
    ]


def test_an_apps_session_is_another_session_than_the_apis_own_with_the_same_id(tenant):
    """A framework app's name is part of a session's identity: the REST API's session "s1" and an
    app's session "s1" of the same user are two sessions, and the API's lookups never reach the app's."""
    app_session = Session.objects.create(
        tenant=tenant, user_id="u1", session_id="s1", app_name="travel", framework="adk"
    )
    own = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"step": 1})

    assert own.pk != app_session.pk
    assert selectors.session_get(tenant=tenant, user_id="u1", session_id="s1").pk == own.pk
    assert selectors.session_get(tenant=tenant, user_id="u1", session_id="s1", app_name="travel").pk == app_session.pk
    assert selectors.round_get(tenant=tenant, user_id="u1", session_id="s1").session_id == own.pk
    assert not Round.objects.filter(session=app_session).exists()
