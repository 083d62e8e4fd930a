"""Google ADK's ``user:`` state: facts about the person, so user data (erased and exported with it).

The models belong to ``userdata_app`` (``Meta.app_label``): their tables, migrations and admin
URLs are that app's, while their code lives with the backend.
"""

from django.db import models
from django.utils import timezone

from agentstate.identifiers import IdentifierField
from agentstate.tenancy.models import SubjectOwned


class AdkUserState(SubjectOwned):
    """ADK's ``user:`` state of one user of one app: facts about the person, so it lives with user
    data (erased and exported with it) and survives the deletion of any session."""

    app_name = IdentifierField()
    state = models.TextField(default="{}")  # JSON text, keys without the prefix
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "userdata_app"
        verbose_name = "ADK user state"
        constraints = [
            # Serves: one user's state in one app; a subject's rows (erasure, export).
            models.UniqueConstraint(fields=["tenant", "user_id", "app_name"], name="adk_user_state_unique"),
        ]
        indexes = [
            # Serves: the admin's exact search by user id across tenants.
            models.Index(fields=["user_id"], name="adk_user_state_user_id"),
        ]

    def __str__(self) -> str:
        return f"ADK user state #{self.pk} ({self.app_name})"


class AdkEventUserDelta(SubjectOwned):
    """The ``user:`` part of one ADK event's state delta, kept with the user's data and tied to its
    event by the session's primary key and the event's append number (no foreign key into process
    state): erasing user data removes it, and the event then reads back without it."""

    app_name = IdentifierField()
    session_pk = models.BigIntegerField()
    event_seq = models.BigIntegerField()
    delta = models.TextField()  # JSON text, keys without the prefix
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "userdata_app"
        verbose_name = "ADK event user delta"
        constraints = [
            # Serves: the deltas of a page of a session's events.
            models.UniqueConstraint(fields=["session_pk", "event_seq"], name="adk_event_user_delta_unique"),
        ]
        indexes = [
            # Serves: a subject's rows (erasure, export).
            models.Index(fields=["tenant", "user_id"], name="adk_user_delta_subject"),
        ]

    def __str__(self) -> str:
        return f"ADK event user delta #{self.pk}"
