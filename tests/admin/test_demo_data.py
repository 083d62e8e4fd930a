"""load_demo_data gives a new user something to browse."""

import itertools

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session
from userdata_app.models import ErasureRequest, UserDatum

FRAMEWORKS_USER = "ada"  # whose sessions are the frameworks' (test_demo_data_has_each_framework)


@pytest.mark.django_db
def test_load_demo_data_fills_tenants_sessions_history_and_requests_once():
    call_command("load_demo_data", "--users", "1", stdout=None)
    sessions = Session.objects.exclude(user_id=FRAMEWORKS_USER)
    assert {s.tenant.slug for s in sessions} == {"demo-acme", "demo-globex", "demo-initech"}
    assert all(s.message_count >= 100 for s in sessions)
    assert UserDatum.objects.count() == 9 and ErasureRequest.objects.count() == 2
    with pytest.raises(CommandError):
        call_command("load_demo_data", stdout=None)


@pytest.mark.django_db
def test_demo_sessions_have_believable_timelines():
    """Messages spread over each session's life, one after another; rounds, the checkpoint and the
    hand-off inside it; updated_at its last activity, ended_at after it; nothing in the future and
    nothing stamped with the load time (issue 15, item 7)."""
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.models import AgentTransition, Checkpoint, Message, Round

    call_command("load_demo_data", "--users", "2", stdout=None)
    loaded = timezone.now()
    sessions = list(Session.objects.exclude(user_id=FRAMEWORKS_USER))
    for session in sessions:
        times = list(Message.objects.filter(session=session).order_by("seq").values_list("created_at", flat=True))
        assert all(a < b for a, b in itertools.pairwise(times)), session  # one after another, never shared
        assert times[-1] - times[0] > timedelta(minutes=10)
        assert session.created_at <= times[0] and session.updated_at >= times[-1]
        assert session.updated_at < loaded - timedelta(minutes=1)
        if session.ended_at is not None:
            assert session.ended_at >= times[-1] and session.ended_at <= loaded
        rounds = list(
            Round.objects.filter(session=session).order_by("round_id").values_list("created_at", "updated_at")
        )
        assert all(times[0] <= c <= u <= session.updated_at for c, u in rounds)
        assert len({c for c, _ in rounds}) == len(rounds)
        for model in (Checkpoint, AgentTransition):
            assert all(
                times[0] <= t <= session.updated_at
                for t in model.objects.filter(session=session).values_list("created_at", flat=True)
            )
    assert len({s.created_at.date() for s in sessions}) > 3  # spread over the month
    assert any(s.ended_at for s in sessions) and any(s.ended_at is None for s in sessions)
    assert any(s.ended_at is None and s.updated_at > loaded - timedelta(hours=2) for s in sessions)  # still going


@pytest.mark.django_db
def test_demo_data_has_each_framework():
    """A session of each framework, as its example writes it: ADK events with a tool call, a
    LangGraph thread with a fork, an OpenAI Agents SDK session with a tool call and a branch
    (issue 29: staff must have each framework's state to read)."""
    import json

    from backends.adk.process.models import AdkEvent
    from backends.langgraph.process.models import LangGraphCheckpoint
    from sessions_app.models import Message

    call_command("load_demo_data", "--users", "1", stdout=None)
    ada = {s.session_id: s for s in Session.objects.filter(user_id=FRAMEWORKS_USER)}
    assert ada["adk-weather"].framework == "adk" and ada["weather-graph"].framework == "langgraph"
    events = [json.loads(e) for e in AdkEvent.objects.filter(session=ada["adk-weather"]).values_list("data", flat=True)]
    assert any("function_call" in e["content"]["parts"][0] for e in events)

    parents = list(
        LangGraphCheckpoint.objects.filter(session=ada["weather-graph"]).values_list("parent_checkpoint_id", flat=True)
    )
    assert any(parents.count(p) == 2 for p in parents if p)  # a checkpoint with two children: a fork

    branch = ada["weather-chat.rome-instead"]
    assert branch.parent == ada["weather-chat"] and branch.metadata["openai_agents"]["branch"] == "rome-instead"
    items = [json.loads(c) for c in Message.objects.filter(session=branch).values_list("content", flat=True)]
    assert {"function_call", "function_call_output"} <= {i.get("type") for i in items}
