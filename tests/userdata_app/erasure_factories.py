"""Builds a subject's data through the services, for erasure, admin and browser tests."""

from __future__ import annotations

from django.apps import apps
from django.urls import reverse
from django.utils import timezone

from agentstate import subject_data
from sessions_app import services as session_services
from userdata_app import services as userdata_services
from userdata_app.erasure import erasure_request_create, erasure_request_verify
from userdata_app.memory.selectors import user_label
from userdata_app.memory.services import memory_batch
from userdata_app.models import ErasureRequest

# Whether the ADK backend is installed (the core runs without it: tests/test_backends_subset.py).
ADK = apps.is_installed("backends.adk")

# What subject_data_create stores for one subject with its default sizes, per erasure category.
SUBJECT_DATA_COUNTS = {
    "user_data": 2,
    "sessions": 2,
    "messages": 6,
    "message_pops": 0,
    "rounds": 2,
    "checkpoints": 2,
    "transitions": 2,
    "run_usage": 2,
    "working_state": 2,
    "langgraph_threads": 0,
    "langgraph_checkpoints": 0,
    "langgraph_writes": 0,
    "langgraph_channel_values": 0,
    "adk_user_state": 0,
    "memories": 1,
    "artifacts": 1,
    "adk_events": 0,  # ADK's categories: tests/integrations/test_adk_subjects.py
}
# The categories of the installed backends only.
SUBJECT_DATA_COUNTS = {c: n for c, n in SUBJECT_DATA_COUNTS.items() if c in subject_data.categories()}


def subject_data_create(*, tenant, user_id: str, sessions: int = 2, messages: int = 3) -> None:
    """Sessions with messages, a round, a checkpoint, a transition, a turn's usage and live working
    state, plus two keys of user data, a memory item and an artifact (with the ADK backend)."""
    for n in range(sessions):
        session = session_services.session_create(
            tenant=tenant, user_id=user_id, session_id=f"s{n}", agent_id="planner"
        )
        session_services.message_append(
            session=session,
            messages=[{"role": "user", "content": f"hello from {user_id} #{i}"} for i in range(messages)],
        )
        session_services.round_save(tenant=tenant, user_id=user_id, session_id=f"s{n}", state={"step": n})
        session_services.working_state_patch(session=session, changes={"current_subtask": f"task of {user_id}"})
        session_services.checkpoint_create(session=session, label="done")
        session_services.transition_record(session=session, from_agent="planner", to_agent="writer", reason="handoff")
        session_services.run_usage_record(session=session, requests=1, input_tokens=7, output_tokens=3, total_tokens=10)
    userdata_services.user_datum_set(tenant=tenant, user_id=user_id, key="email", value=f"{user_id}@example.com")
    userdata_services.user_datum_set(tenant=tenant, user_id=user_id, key="name", value=user_id.title())
    namespace = ["users", user_label(user_id), "memories"]
    memory = {"op": "put", "namespace": namespace, "key": "food", "value": {"likes": "tea"}}
    memory_batch(tenant=tenant, ops=[memory])
    if not ADK:
        return
    from backends.adk.people.artifacts.services import artifact_save

    artifact_save(tenant=tenant, app_name="files", user_id=user_id, filename="user:notes.txt", artifact={"text": "hi"})


def verified_request(*, subjects, scope: str, actor=None):
    request = erasure_request_create(subjects=subjects, scope=scope, requested_by="ticket 42", actor=actor)
    return erasure_request_verify(request=request, identity_check="reply from the account's address", actor=actor)


def compliance_group():
    """The "Compliance" group as its data migration makes it. Transactional tests flush the
    database, migration rows included, so tests that need the group call this."""
    import importlib

    from django.contrib.auth.models import Group, Permission

    from userdata_app.migrations._grants import COMPLIANCE_GROUP

    group, _ = Group.objects.get_or_create(name=COMPLIANCE_GROUP)
    for name in (
        "0003_compliance_group",
        "0007_erasure_review_permission",
        "0008_compliance_views_framework_records",
        "0010_memory_item",
        "0014_access_requests",
        "0015_artifact",
        "0016_legal_hold_permissions",
    ):
        migration = importlib.import_module(f"userdata_app.migrations.{name}")
        for app_label, codenames in migration.PERMISSIONS.items():
            group.permissions.add(*Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames))
    return group


def support_group():
    """The "Support" group as its data migration makes it (recreated: transactional tests flush
    the database, migration rows included)."""
    import importlib

    from django.contrib.auth.models import Group, Permission

    from userdata_app.migrations._grants import SUPPORT_GROUP

    group, _ = Group.objects.get_or_create(name=SUPPORT_GROUP)
    migration = importlib.import_module("userdata_app.migrations.0013_support_group")
    for app_label, codenames in migration.PERMISSIONS.items():
        group.permissions.add(*Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames))
    return group


def subject_data_restored(*, tenant, user_id: str, before, **sizes) -> None:
    """The subject's data as a backup restore brings it back: rows created (and last written)
    before ``before``, the erasure they predate. Re-applying an erasure erases exactly those."""
    from datetime import timedelta

    from backends.adk.people.artifacts.models import Artifact
    from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
    from userdata_app.memory.models import MemoryItem
    from userdata_app.models import UserDatum

    subject_data_create(tenant=tenant, user_id=user_id, **sizes)
    at = before - timedelta(days=3)
    for model in (Session, Round, UserDatum, MemoryItem):
        model.objects.filter(tenant=tenant, user_id=user_id).update(created_at=at, updated_at=at)
    for model in (Message, Checkpoint, AgentTransition, Artifact):
        model.objects.filter(tenant=tenant, user_id=user_id).update(created_at=at)


def erasure_request_added(client, tenant, user_id: str, *, scope: str = "everything") -> ErasureRequest:
    """Record a request through the admin's add form, as an officer types it."""
    response = client.post(
        reverse("admin:userdata_app_erasurerequest_add"),
        {
            "scope": scope,
            "received_at_0": timezone.localdate().isoformat(),
            "received_at_1": "10:00:00",
            "requested_by": "ticket 9",
            "reason": "",
            "subjects-TOTAL_FORMS": "1",
            "subjects-INITIAL_FORMS": "0",
            "subjects-MIN_NUM_FORMS": "1",
            "subjects-MAX_NUM_FORMS": "1000",
            "subjects-0-tenant": str(tenant.pk),
            "subjects-0-user_id": user_id,
        },
    )
    assert response.status_code == 302, response.context["errors"] if response.context else response
    return ErasureRequest.objects.latest("id")
