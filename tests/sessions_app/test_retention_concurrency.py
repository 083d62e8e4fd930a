"""Real threads against PostgreSQL: a write racing the retention sweep survives, and its session
stays; the sweep never waits for the writer (its batch skips locked sessions). A write that waits
for a batch holding its session reopens it (retention's end) or is refused (deleted): never
acknowledged and then lost."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from agentstate.exceptions import NotFound
from backends.langgraph.process import services as langgraph
from backends.langgraph.process.models import LangGraphCheckpoint
from sessions_app import services
from sessions_app.models import Message, Session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def _hold_a_write(write, holding: threading.Event, release: threading.Event, errors: list) -> threading.Thread:
    """Run ``write`` in a transaction kept open (its row lock held) until ``release`` is set."""

    def run():
        try:
            with transaction.atomic():
                write()
                holding.set()
                assert release.wait(timeout=30)
        except BaseException as exc:
            errors.append(exc)
            holding.set()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _aged(tenant, session_id, *, ended: bool) -> Session:
    session = services.session_create(tenant=tenant, user_id="u1", session_id=session_id)
    old = timezone.now() - timedelta(days=30)
    Session.objects.filter(pk=session.pk).update(updated_at=old, ended_at=old if ended else None)
    return session


def test_an_append_racing_the_idle_sweep_survives_and_its_session_stays_live(postgres_only, tenant):
    services.retention_policy_save(tenant=tenant, end_idle_after_days=7)
    busy = _aged(tenant, "busy", ended=False)
    idle = [_aged(tenant, f"idle{i}", ended=False) for i in range(5)]
    holding, release, errors = threading.Event(), threading.Event(), []
    writer = _hold_a_write(
        lambda: services.message_append(session=busy, messages=[{"role": "user", "content": "still here"}]),
        holding,
        release,
        errors,
    )
    assert holding.wait(timeout=30)

    started = time.monotonic()
    run = services.retention_apply(batch_size=2)
    swept_in = time.monotonic() - started
    release.set()
    writer.join(timeout=30)

    assert errors == []
    assert swept_in < 10  # it skipped the locked session instead of waiting for the writer
    assert run.counts["acme"]["idle_sessions_ended"] == 5
    busy.refresh_from_db()
    assert busy.ended_at is None and busy.message_count == 1
    assert Message.objects.filter(session=busy).count() == 1
    assert all(s.ended_at is not None for s in Session.objects.filter(pk__in=[s.pk for s in idle]))
    # The write made it recent: the next run leaves it live too.
    services.retention_apply()
    busy.refresh_from_db()
    assert busy.ended_at is None


def test_a_session_written_to_while_the_delete_sweep_runs_is_not_deleted(postgres_only, tenant):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=7)
    touched = _aged(tenant, "touched", ended=True)
    expired = [_aged(tenant, f"old{i}", ended=True) for i in range(4)]
    holding, release, errors = threading.Event(), threading.Event(), []
    writer = _hold_a_write(
        lambda: services.session_update(session=touched, metadata={"note": "kept"}), holding, release, errors
    )
    assert holding.wait(timeout=30)

    run = services.retention_apply(batch_size=2)
    release.set()
    writer.join(timeout=30)

    assert errors == []
    assert run.counts["acme"]["ended_sessions_deleted"] == 4
    assert list(Session.objects.values_list("pk", "metadata")) == [(touched.pk, {"note": "kept"})]
    assert not Session.objects.filter(pk__in=[s.pk for s in expired]).exists()


def _sweep_held(tenant, holding: threading.Event, release: threading.Event, errors: list) -> threading.Thread:
    """Run the sweep inside a transaction kept open: its batches' locks are held until ``release``."""
    return _hold_a_write(lambda: services.retention_apply(tenant=tenant), holding, release, errors)


def _blocked(write, results: list) -> threading.Thread:
    def run():
        try:
            results.append(write())
        except BaseException as exc:
            results.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.5)  # it reaches the session's row lock and waits there
    return thread


def test_a_langgraph_write_waiting_for_the_idle_sweep_reopens_the_thread(postgres_only, tenant):
    services.retention_policy_save(tenant=tenant, end_idle_after_days=7)
    put = {
        "tenant": tenant,
        "thread_id": "busy",
        "user_id": None,
        "default_user_id": "u1",
        "checkpoint_ns": "",
        "parent_checkpoint_id": None,
        "checkpoint": {"type": "json", "data": "e30="},
        "metadata": {},
        "channel_versions": {},
    }
    langgraph.checkpoint_put(checkpoint_id="c1", **put)
    Session.objects.update(updated_at=timezone.now() - timedelta(days=30))
    holding, release, errors, results = threading.Event(), threading.Event(), [], []
    sweep = _sweep_held(tenant, holding, release, errors)
    assert holding.wait(timeout=30)

    writer = _blocked(lambda: langgraph.checkpoint_put(checkpoint_id="c2", **put), results)
    assert not results  # the sweep holds the thread: the write waits
    release.set()
    sweep.join(timeout=30), writer.join(timeout=30)

    assert errors == [] and results == [None]
    thread = Session.objects.get()
    assert thread.ended_at is None and not thread.ended_by_retention
    assert list(LangGraphCheckpoint.objects.order_by("checkpoint_id").values_list("checkpoint_id", flat=True)) == [
        "c1",
        "c2",
    ]


def test_an_append_waiting_for_the_delete_sweep_is_refused_not_acknowledged(postgres_only, tenant):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=7)
    doomed = _aged(tenant, "doomed", ended=True)
    Session.objects.update(ended_by_retention=True)  # a write would reopen it, had the sweep not won
    holding, release, errors, results = threading.Event(), threading.Event(), [], []
    sweep = _sweep_held(tenant, holding, release, errors)
    assert holding.wait(timeout=30)

    writer = _blocked(lambda: services.message_append(session=doomed, messages=[{"content": "late"}]), results)
    release.set()
    sweep.join(timeout=30), writer.join(timeout=30)

    assert errors == [] and len(results) == 1 and isinstance(results[0], NotFound)
    assert not Session.objects.exists() and not Message.objects.exists()
