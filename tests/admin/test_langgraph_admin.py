"""The admin's LangGraph pages: a thread's checkpoints as a timeline (step, source, state values,
metadata) and one checkpoint's state and pending writes, read-only."""

import base64

import ormsgpack
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from backends.langgraph.process import services
from backends.langgraph.process.models import LangGraphCheckpoint, LangGraphThread


def typed(value):
    """A value as LangGraph's serializer writes it (msgpack); None: bytes msgpack cannot read."""
    data = b"\xc1\xc1\xc1\xc1\xc1" if value is None else ormsgpack.packb(value)
    return {"type": "msgpack", "data": base64.b64encode(data).decode()}


@pytest.fixture
def thread(tenant):
    parent = None
    for step, source in enumerate(("input", "loop", "loop")):
        checkpoint_id = f"1ef-{step}"
        services.checkpoint_put(
            tenant=tenant,
            thread_id="support/42",
            user_id="alice",
            default_user_id="nobody",
            checkpoint_ns="",
            checkpoint_id=checkpoint_id,
            parent_checkpoint_id=parent,
            checkpoint=typed({"channel_values": {"messages": [f"said at step {step}"]}} if step < 2 else None),
            metadata={"source": source, "step": step - 1, "run_id": "run-7"},
            channel_versions={"messages": step + 1},
        )
        parent = checkpoint_id
    services.writes_put(
        tenant=tenant,
        thread_id="support/42",
        user_id=None,
        default_user_id="nobody",
        checkpoint_ns="",
        checkpoint_id="1ef-1",
        task_id="task-a",
        task_path="~agent",
        replace=False,
        writes=[{"idx": 0, "channel": "messages", "value": typed("a pending reply")}],
    )
    return LangGraphThread.objects.get(thread_id="support/42")


@pytest.fixture
def admin_client(client, db):
    client.force_login(get_user_model().objects.create_superuser("root"))
    return client


def test_thread_page_shows_the_checkpoints_as_a_timeline(admin_client, thread):
    page = admin_client.get(reverse("admin:sessions_app_langgraphthread_change", args=[thread.pk])).content.decode()

    assert "support/42" in page and "alice" in page
    rows = page.split("<tbody>")[1]
    # In step order, each with its step, source, state values and metadata (labelled, its JSON a click away).
    assert rows.index('title="1ef-0"') < rows.index('title="1ef-1"') < rows.index('title="1ef-2"')
    assert "<td>loop</td>" in rows and "<td>input</td>" in rows
    assert "said at step 1" in rows and "msgpack value, 5 bytes" in rows
    assert "<b>run id:</b> run-7" in rows and "&quot;run_id&quot;: &quot;run-7&quot;" in rows
    assert (
        admin_client.post(reverse("admin:sessions_app_langgraphthread_change", args=[thread.pk]), {}).status_code == 403
    )


def test_checkpoint_page_shows_its_state_and_pending_writes(admin_client, thread):
    with_view = LangGraphCheckpoint.objects.get(checkpoint_id="1ef-1")
    page = admin_client.get(
        reverse("admin:sessions_app_langgraphcheckpoint_change", args=[with_view.pk])
    ).content.decode()
    assert "said at step 1" in page
    assert "task-a" in page and "a pending reply" in page

    without_view = LangGraphCheckpoint.objects.get(checkpoint_id="1ef-2")
    page = admin_client.get(
        reverse("admin:sessions_app_langgraphcheckpoint_change", args=[without_view.pk])
    ).content.decode()
    assert "msgpack value, 5 bytes" in page and "No pending writes." in page

    listing = admin_client.get(
        reverse("admin:sessions_app_langgraphcheckpoint_changelist"), {"session__id__exact": thread.pk}
    )
    assert listing.status_code == 200 and listing.context["cl"].result_count == 3
