"""Retention: each policy rule, the dry run, an interrupted sweep, the command's output and the
run it records. SQLite and PostgreSQL."""

import base64
import io
import itertools
import json
from datetime import timedelta

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.utils import timezone

from agentstate import subject_data
from agentstate.exceptions import InvalidInput
from backends.adk.people.models import AdkEventUserDelta, AdkUserState
from backends.adk.process.models import AdkEvent
from backends.langgraph.process import services as langgraph
from backends.langgraph.process.models import LangGraphBlob, LangGraphCheckpoint, LangGraphWrite
from sessions_app import selectors, services
from sessions_app.models import Message, MessagePop, RetentionPolicy, RetentionRun, Round, Session
from userdata_app.models import ErasedSubject, ErasureRequest

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


def session_with(tenant, session_id, *, messages=0, ended_days_ago=None, idle_days=0, user_id="u1"):
    session = services.session_create(tenant=tenant, user_id=user_id, session_id=session_id)
    if messages:
        services.message_append(
            session=session, messages=[{"role": "user", "content": f"m{i}"} for i in range(messages)]
        )
    now = timezone.now()
    changes = {"updated_at": now - idle_days * DAY}
    if ended_days_ago is not None:  # ending is the last activity, as session_end records it
        changes["ended_at"] = changes["updated_at"] = now - ended_days_ago * DAY
    Session.objects.filter(pk=session.pk).update(**changes)
    session.refresh_from_db()
    return session


def test_no_policy_keeps_everything(tenant):
    session_with(tenant, "old", messages=2, ended_days_ago=900)

    run = services.retention_apply()

    assert Session.objects.count() == 1 and Message.objects.count() == 2
    assert run.counts == {}


def test_ended_sessions_are_deleted_n_days_after_they_ended(tenant, other_tenant):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=30)
    expired = [session_with(tenant, f"old{i}", messages=3, ended_days_ago=31) for i in range(5)]
    recent = session_with(tenant, "recent", messages=1, ended_days_ago=29)
    live = session_with(tenant, "live", messages=1, idle_days=400)
    elsewhere = session_with(other_tenant, "theirs", messages=1, ended_days_ago=400)  # no policy there

    run = services.retention_apply(batch_size=2)

    assert not Session.objects.filter(pk__in=[s.pk for s in expired]).exists()
    assert set(Session.objects.values_list("pk", flat=True)) == {recent.pk, live.pk, elsewhere.pk}
    assert Message.objects.count() == 3
    # Each deleted session counts with what went with it: the session and its 3 messages.
    assert run.counts == {"acme": {"ended_sessions_deleted": 5 * 4}} and not run.dry_run
    # Retention is not erasure: no request, no receipt, no registry entry.
    assert not ErasureRequest.objects.exists() and not ErasedSubject.objects.exists()


def test_live_sessions_idle_n_days_are_ended_and_lose_their_working_state(tenant):
    services.retention_policy_save(tenant=tenant, end_idle_after_days=7)
    idle = session_with(tenant, "idle")
    busy = session_with(tenant, "busy")
    services.working_state_replace(session=idle, data={"k": "v"})
    services.working_state_replace(session=busy, data={"k": "v"})
    Session.objects.filter(pk=idle.pk).update(updated_at=timezone.now() - 8 * DAY)

    run = services.retention_apply()

    idle.refresh_from_db(), busy.refresh_from_db()
    assert idle.is_ended and not busy.is_ended
    assert selectors.working_state_get(session=idle) == {}
    assert selectors.working_state_get(session=busy) == {"k": "v"}
    assert run.counts["acme"]["idle_sessions_ended"] == 1


def test_only_the_latest_k_rounds_of_a_session_stay(tenant):
    services.retention_policy_save(tenant=tenant, keep_latest_rounds=2)
    for round_id in (1, 5, 3, 9):
        services.round_save(tenant=tenant, user_id="u1", session_id="a", state={"r": round_id}, round_id=round_id)
    services.round_save(tenant=tenant, user_id="u1", session_id="b", state={}, round_id=4)

    run = services.retention_apply()

    assert sorted(Round.objects.filter(session__session_id="a").values_list("round_id", flat=True)) == [5, 9]
    assert Round.objects.filter(session__session_id="b").count() == 1
    assert run.counts["acme"]["rounds_deleted"] == 2
    # The next automatic round still follows the largest id.
    assert services.round_save(tenant=tenant, user_id="u1", session_id="a", state={}).round_id == 10


def typed(text):
    return {"type": "json", "data": base64.b64encode(json.dumps(text).encode()).decode()}


def put_checkpoint(tenant, ns, checkpoint_id, parent=None, thread="t1"):
    """A checkpoint naming ``messages`` at a version of its own (sent with it) and ``notes`` at
    version 1 (sent by the thread's first checkpoint only)."""
    n = int(checkpoint_id[1:])
    langgraph.checkpoint_put(
        tenant=tenant,
        thread_id=thread,
        user_id=None,
        default_user_id="u1",
        checkpoint_ns=ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=parent,
        checkpoint=typed(checkpoint_id),
        metadata={"step": 0},
        channel_versions={"messages": n, "notes": 1},
        channel_values=[
            {"channel": "messages", **typed(f"messages of {checkpoint_id}")},
            *([{"channel": "notes", **typed("notes")}] if n == 1 else []),
        ],
    )
    langgraph.writes_put(
        tenant=tenant,
        thread_id=thread,
        user_id=None,
        default_user_id="u1",
        checkpoint_ns=ns,
        checkpoint_id=checkpoint_id,
        task_id="task",
        task_path="",
        replace=False,
        writes=[{"idx": 0, "channel": "messages", "value": typed(f"write of {checkpoint_id}")}],
    )


def test_only_the_latest_k_checkpoints_per_namespace_stay_with_their_writes(tenant):
    services.retention_policy_save(tenant=tenant, keep_latest_checkpoints=2)
    for ns in ("", "child:1"):
        parent = None
        for n in range(1, 5):
            put_checkpoint(tenant, ns, f"c{n}", parent)
            parent = f"c{n}"
    put_checkpoint(tenant, "", "c1", thread="t2")  # a thread with one checkpoint keeps it

    run = services.retention_apply()

    kept = set(
        LangGraphCheckpoint.objects.values_list(
            "session__langgraph_thread__thread_id", "checkpoint_ns", "checkpoint_id"
        )
    )
    assert kept == {
        ("t1", "", "c3"),
        ("t1", "", "c4"),
        ("t1", "child:1", "c3"),
        ("t1", "child:1", "c4"),
        ("t2", "", "c1"),
    }
    # The kept checkpoints' writes stay (the latest state can be rebuilt); orphaned ones are gone.
    assert set(LangGraphWrite.objects.values_list("checkpoint_ns", "checkpoint_id")) == {
        ("", "c3"),
        ("", "c4"),
        ("child:1", "c3"),
        ("child:1", "c4"),
        ("", "c1"),
    }
    # The values no kept checkpoint names are gone; those they name stay, however old.
    assert set(
        LangGraphBlob.objects.values_list("session__langgraph_thread__thread_id", "checkpoint_ns", "channel", "version")
    ) == {
        *{("t1", ns, "messages", v) for ns in ("", "child:1") for v in ("3", "4")},
        *{("t1", ns, "notes", "1") for ns in ("", "child:1")},
        ("t2", "", "messages", "1"),
        ("t2", "", "notes", "1"),
    }
    assert run.counts["acme"]["checkpoints_deleted"] == 4 + 4 + 4  # the checkpoints, their writes and values


def test_old_messages_are_dropped_and_the_counters_stay_true(tenant):
    services.retention_policy_save(tenant=tenant, drop_messages_after_days=10)
    session = session_with(tenant, "long", messages=5)
    young = session_with(tenant, "young", messages=2)
    old_seqs = [1, 2, 3]
    Message.objects.filter(session=session, seq__in=old_seqs).update(created_at=timezone.now() - 11 * DAY)
    generation = session.history_generation

    run = services.retention_apply()

    session.refresh_from_db(), young.refresh_from_db()
    assert list(Message.objects.filter(session=session).order_by("seq").values_list("seq", flat=True)) == [4, 5]
    assert session.message_count == 2 and session.last_seq == 5
    assert session.history_generation == generation + 1
    assert (young.message_count, young.history_generation) == (2, 0)
    assert run.counts["acme"]["messages_dropped"] == 3
    # The next append continues after the last seq: numbers are never reused.
    assert services.message_append(session=session, messages=[{"role": "user", "content": "x"}]).messages[0].seq == 6


def test_dropping_old_messages_covers_the_copies_pops_keep_and_adk_events(tenant, api):
    """Every table that holds message content: a pop's kept copy of an old message and old ADK
    events go with the old messages; an old event's user: delta is user data and stays."""
    services.retention_policy_save(tenant=tenant, drop_messages_after_days=10)
    long_ago = timezone.now() - 11 * DAY
    session = session_with(tenant, "chat", messages=3)
    Message.objects.filter(session=session).update(created_at=long_ago)
    old_pop = services.message_pop(session=session, idempotency_key="k-old")  # an old message, popped now
    services.message_append(session=session, messages=[{"role": "user", "content": "new"}])
    services.message_pop(session=session, idempotency_key="k-new")
    adk = "/api/v1/adk/apps/travel/users/u1/sessions/"
    assert api.post(adk, {"session_id": "a1"}, format="json").status_code == 201
    for event_id, delta in (("e1", {"user:city": "Paris"}), ("e2", {})):
        event = {"id": event_id, "author": "user", "timestamp": 1.0, "content": {"parts": [{"text": event_id}]}}
        body = {"event": json.dumps({**event, "actions": {"state_delta": delta}})}
        assert api.post(adk + "a1/events/", body, format="json").status_code == 201
    adk_session = Session.objects.get(session_id="a1")
    AdkEvent.objects.filter(session=adk_session, event_id="e1").update(created_at=long_ago)

    run = services.retention_apply()

    assert old_pop is not None and old_pop["content"] == "m2"
    assert list(MessagePop.objects.values_list("key", flat=True)) == ["k-new"]
    assert not Message.objects.filter(session=session).exists()
    assert list(AdkEvent.objects.values_list("event_id", flat=True)) == ["e2"]
    adk_session.refresh_from_db()
    assert adk_session.history_generation == 1
    assert [e["id"] for e in api.get(adk + "a1/").json()["events"]] == ["e2"]
    assert AdkEventUserDelta.objects.count() == 1 and json.loads(AdkUserState.objects.get().state) == {"city": "Paris"}
    assert run.counts["acme"]["messages_dropped"] == 4  # two messages, one pop's copy, one event


def test_every_table_of_a_session_says_which_rule_removes_its_rows_or_why_none_does():
    """The map of people's data (agentstate.subject_data) says it per model: a rule (one that exists)
    or, in words, why none applies."""
    hanging = {
        model
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if field.concrete and field.is_relation and field.related_model is Session
    }
    # A derived row's source link (a memory's source session) goes with its session, as its
    # declaration's DerivedFrom says: the row it links is user data, with rules of its own.
    derived = {d.derived_from.link for d in subject_data.declared() if d.derived_from is not None}
    for model in (hanging - derived) | {Session}:
        retention = subject_data.declaration_of(model).retention
        assert retention is not None, model
        if isinstance(retention, str) and " " not in retention:
            assert retention in selectors.retention_policy_fields(), model


def test_a_dry_run_counts_and_changes_nothing(tenant):
    services.retention_policy_save(
        tenant=tenant,
        delete_ended_after_days=1,
        end_idle_after_days=1,
        keep_latest_rounds=1,
        drop_messages_after_days=1,
    )
    session_with(tenant, "ended", messages=2, ended_days_ago=5)
    live = session_with(tenant, "live", messages=3, idle_days=5)
    Message.objects.filter(session=live).update(created_at=timezone.now() - 5 * DAY)
    for round_id in (1, 2, 3):
        services.round_save(tenant=tenant, user_id="u2", session_id="rounds", state={}, round_id=round_id)
    before = {m.__name__: list(m.objects.order_by("pk").values()) for m in (Session, Message, Round)}

    run = services.retention_apply(dry_run=True)

    assert {m.__name__: list(m.objects.order_by("pk").values()) for m in (Session, Message, Round)} == before
    assert run.dry_run and run.counts["acme"] == {
        "ended_sessions_deleted": 1 + 2,  # the session and its messages
        "idle_sessions_ended": 1,
        "rounds_deleted": 2,
        "messages_dropped": 3,
    }


def test_the_dry_run_reports_what_the_real_run_then_removes_rule_by_rule(tenant):
    """Issue 29: a session the first rule deletes was counted again by the message rule in the
    dry run (3,534 rows against 1,829), and the real run counted it as one row, not its contents."""
    services.retention_policy_save(
        tenant=tenant,
        delete_ended_after_days=1,
        end_idle_after_days=1,
        keep_latest_rounds=1,
        keep_latest_checkpoints=1,
        drop_messages_after_days=1,
    )
    ended = session_with(tenant, "ended", messages=4)
    live = session_with(tenant, "live", messages=3)
    for session, rounds in ((ended, 3), (live, 2)):
        for round_id in range(1, rounds + 1):
            services.round_save(tenant=tenant, user_id="u1", session_id=session.session_id, state={}, round_id=round_id)
    for n in range(1, 4):
        put_checkpoint(tenant, "", f"c{n}", f"c{n - 1}" if n > 1 else None)
    old = timezone.now() - 5 * DAY
    Message.objects.update(created_at=old)
    Session.objects.update(updated_at=old)
    Session.objects.filter(pk=ended.pk).update(ended_at=old)

    dry = services.retention_apply(dry_run=True)
    real = services.retention_apply()

    assert dry.counts == real.counts
    assert real.counts["acme"] == {
        "ended_sessions_deleted": 1 + 4 + 3,  # the session, its messages and rounds
        "idle_sessions_ended": 2,  # "live" and the LangGraph thread's session
        "rounds_deleted": 1,
        "checkpoints_deleted": 2 + 2 + 2,  # two checkpoints, their writes and the values only they named
        "messages_dropped": 3,  # the live session's only: the ended session's went with it
    }
    assert dry.total == real.total


def test_an_interrupted_sweep_leaves_whole_batches_and_the_next_run_finishes(tenant):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=1)
    for i in range(5):
        session_with(tenant, f"s{i}", messages=2, ended_days_ago=3)

    class Interrupted(Exception):
        pass

    def stop_after_first_batch(batch):
        raise Interrupted

    with pytest.raises(Interrupted):
        services.retention_apply(batch_size=2, on_batch=stop_after_first_batch)

    # The first batch committed whole: its sessions are gone with all their messages.
    assert Session.objects.count() == 3 and Message.objects.count() == 6
    assert all(s.message_count == 2 for s in Session.objects.all())
    assert not RetentionRun.objects.exists()  # only a finished run is recorded

    run = services.retention_apply(batch_size=2)

    assert not Session.objects.exists() and not Message.objects.exists()
    assert run.counts["acme"]["ended_sessions_deleted"] == 3 * (1 + 2)  # three sessions, two messages each


@pytest.mark.parametrize(
    "values, field",
    [
        ({"keep_latest_rounds": 0}, "keep_latest_rounds"),
        ({"keep_latest_checkpoints": -1}, "keep_latest_checkpoints"),
        ({"delete_ended_after_days": 0}, "delete_ended_after_days"),
        ({"end_idle_after_days": "7"}, "end_idle_after_days"),
        ({"drop_messages_after_days": True}, "drop_messages_after_days"),
        ({"keep_forever": 3}, "keep_forever"),
    ],
)
def test_bad_rules_are_refused_naming_the_field_and_nothing_is_stored(tenant, values, field):
    with pytest.raises(InvalidInput) as caught:
        services.retention_policy_save(tenant=tenant, **values)

    assert field in caught.value.fields and field in str(caught.value)
    assert not RetentionPolicy.objects.exists()


def test_the_command_prints_what_it_removes_per_tenant_and_category_and_records_the_run(tenant, other_tenant):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=1, keep_latest_rounds=1)
    services.retention_policy_save(tenant=other_tenant, end_idle_after_days=1)
    session_with(tenant, "ended", ended_days_ago=2)
    session_with(other_tenant, "idle", idle_days=2)

    dry, out = io.StringIO(), io.StringIO()
    call_command("apply_retention", "--dry-run", stdout=dry)
    call_command("apply_retention", stdout=out)

    assert "acme: ended_sessions_deleted would remove 1" in dry.getvalue()
    assert "globex: idle_sessions_ended would remove 1" in dry.getvalue()
    assert "acme: ended_sessions_deleted removed 1" in out.getvalue()
    assert "acme: rounds_deleted removed 0" in out.getvalue()
    assert "globex: idle_sessions_ended removed 1" in out.getvalue()
    assert "batch 1: " in out.getvalue()  # not a terminal: plain progress lines
    runs = list(RetentionRun.objects.order_by("started_at"))
    assert [r.dry_run for r in runs] == [True, False] and runs[1].total == 2


def test_the_command_can_sweep_one_tenant_and_refuses_an_unknown_one(tenant, other_tenant):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=1)
    services.retention_policy_save(tenant=other_tenant, delete_ended_after_days=1)
    session_with(tenant, "a", ended_days_ago=2)
    theirs = session_with(other_tenant, "b", ended_days_ago=2)

    call_command("apply_retention", "--tenant", "acme", stdout=io.StringIO())

    assert list(Session.objects.values_list("pk", flat=True)) == [theirs.pk]
    assert RetentionRun.objects.get().tenant_slug == "acme"
    with pytest.raises(CommandError, match="nope"):
        call_command("apply_retention", "--tenant", "nope", stdout=io.StringIO())


def _statements_per_batch(tenant, rule: dict, *, messages: int, rounds: int) -> set[int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    services.retention_policy_save(tenant=tenant, **rule)
    for i in range(6):
        session = session_with(tenant, f"s{messages}-{i}", messages=messages)
        for round_id in range(1, rounds + 1):
            services.round_save(tenant=tenant, user_id="u1", session_id=session.session_id, state={}, round_id=round_id)
    old = timezone.now() - 5 * DAY
    Message.objects.update(created_at=old)
    Session.objects.update(updated_at=old, ended_at=old if "delete_ended_after_days" in rule else None)
    marks = []
    with CaptureQueriesContext(connection) as queries:
        services.retention_apply(batch_size=2, on_batch=lambda batch: marks.append(len(queries)))
    Session.objects.all().delete()
    return {b - a for a, b in itertools.pairwise(marks)}  # between two commits: exactly one batch


@pytest.mark.parametrize(
    "rule",
    [
        {"delete_ended_after_days": 1},
        {"end_idle_after_days": 1},
        {"keep_latest_rounds": 1},
        {"drop_messages_after_days": 1},
    ],
)
@pytest.mark.scale
def test_a_batch_sends_the_same_statements_whatever_the_data(tenant, rule):
    small = _statements_per_batch(tenant, rule, messages=1, rounds=2)
    large = _statements_per_batch(tenant, rule, messages=60, rounds=30)

    assert len(small) == 1 and small == large


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_command_draws_a_progress_bar_to_the_total(tenant):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=1)
    for i in range(4):
        session_with(tenant, f"s{i}", ended_days_ago=2)
    out = Terminal()

    call_command("apply_retention", "--batch-size", "3", stdout=out)

    text = out.getvalue()
    assert "\racme ended_sessions_deleted [######################........] 3/4 sessions" in text
    assert "\racme ended_sessions_deleted [##############################] 4/4 sessions\n" in text
    assert "batch 1:" not in text  # plain lines are for logs


def test_saving_a_policy_keeps_the_rules_of_a_backend_not_installed(tenant):
    """A deployment that leaves a backend out (AGENTSTATE_BACKENDS) and edits a policy loses none of
    that backend's rules: installing it again finds them."""
    RetentionPolicy.objects.create(tenant=tenant, backend_rules={"keep_latest_turns": 4, "keep_latest_checkpoints": 9})

    services.retention_policy_save(tenant=tenant, keep_latest_rounds=5, keep_latest_checkpoints=None)

    policy = RetentionPolicy.objects.get(tenant=tenant)
    assert (policy.keep_latest_rounds, policy.backend_rules) == (5, {"keep_latest_turns": 4})
