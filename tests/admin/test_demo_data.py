"""load_demo_data gives a new user something to browse."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session
from userdata_app.models import ErasureRequest, UserDatum


@pytest.mark.django_db
def test_load_demo_data_fills_tenants_sessions_history_and_requests_once():
    call_command("load_demo_data", "--users", "1", stdout=None)
    sessions = Session.objects.all()
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
    sessions = list(Session.objects.all())
    for session in sessions:
        times = list(Message.objects.filter(session=session).order_by("seq").values_list("created_at", flat=True))
        assert all(a < b for a, b in zip(times, times[1:])), session  # one after another, never shared
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
