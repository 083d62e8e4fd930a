"""Builds a subject's data through the services, for erasure, admin and browser tests."""

from __future__ import annotations

from sessions_app import services as session_services
from userdata_app import services as userdata_services
from userdata_app.erasure import erasure_request_create, erasure_request_verify


def subject_data_create(*, tenant, user_id: str, sessions: int = 2, messages: int = 3) -> None:
    """Sessions with messages, a round, a checkpoint, a transition and live working state, plus
    two keys of user data."""
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
    userdata_services.user_datum_set(tenant=tenant, user_id=user_id, key="email", value=f"{user_id}@example.com")
    userdata_services.user_datum_set(tenant=tenant, user_id=user_id, key="name", value=user_id.title())


def verified_request(*, subjects, scope: str, actor=None):
    request = erasure_request_create(subjects=subjects, scope=scope, requested_by="ticket 42", actor=actor)
    return erasure_request_verify(request=request, actor=actor)


def compliance_group():
    """The "Compliance" group as its data migration makes it. Transactional tests flush the
    database, migration rows included, so tests that need the group call this."""
    import importlib

    from django.contrib.auth.models import Group, Permission

    for name in ("0003_compliance_group", "0007_erasure_review_permission"):
        migration = importlib.import_module(f"userdata_app.migrations.{name}")
        group, _ = Group.objects.get_or_create(name=migration.COMPLIANCE_GROUP)
        for app_label, codenames in migration.PERMISSIONS.items():
            group.permissions.add(*Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames))
    return group


def subject_data_restored(*, tenant, user_id: str, before, **sizes) -> None:
    """The subject's data as a backup restore brings it back: rows created (and last written)
    before ``before``, the erasure they predate. Re-applying an erasure erases exactly those."""
    from datetime import timedelta

    from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
    from userdata_app.models import UserDatum

    subject_data_create(tenant=tenant, user_id=user_id, **sizes)
    at = before - timedelta(days=3)
    for model in (Session, Round, UserDatum):
        model.objects.filter(tenant=tenant, user_id=user_id).update(created_at=at, updated_at=at)
    for model in (Message, Checkpoint, AgentTransition):
        model.objects.filter(tenant=tenant, user_id=user_id).update(created_at=at)
