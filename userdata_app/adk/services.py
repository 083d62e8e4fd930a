"""Writes of ADK's ``user:`` state: one user's state per app, and each event's part of it."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agentstate.subjects import USER_DATA, subject_write_check
from agentstate.tenancy.models import Tenant
from sessions_app.adk.state import json_object, json_text
from userdata_app.adk.models import AdkEventUserDelta, AdkUserState


@transaction.atomic(savepoint=False)  # a failure rolls back the caller's whole transaction anyway
def adk_user_state_update(
    *,
    tenant: Tenant,
    app_name: str,
    user_id: str,
    delta: dict[str, Any],
    session_pk: int | None = None,
    event_seq: int | None = None,
) -> None:
    """dict.update() of the user's state in the app, under its row lock; with an event
    (``session_pk``, ``event_seq``) the delta is also kept as that event's, so the event reads back
    whole until the user's data is erased."""
    subject_write_check(tenant=tenant, user_id=user_id, category=USER_DATA)
    rows = AdkUserState.objects.select_for_update().filter(tenant=tenant, app_name=app_name, user_id=user_id)
    row = rows.first()
    if row is None:
        try:
            with transaction.atomic():
                row = AdkUserState.objects.create(tenant=tenant, app_name=app_name, user_id=user_id, state="{}")
        except IntegrityError:  # created meanwhile by another writer
            row = rows.get()
    state = json_object(row.state)
    state.update(delta)
    AdkUserState.objects.filter(pk=row.pk).update(state=json_text(state), updated_at=timezone.now())
    if session_pk is not None:
        if event_seq is None:
            raise TypeError("an event's delta needs the event's event_seq")
        AdkEventUserDelta.objects.create(
            tenant=tenant,
            app_name=app_name,
            user_id=user_id,
            session_pk=session_pk,
            event_seq=event_seq,
            delta=json_text(delta),
        )
