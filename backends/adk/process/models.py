"""Google ADK's process state: a session's events, and ``app:`` state (about no person).

The models belong to ``sessions_app`` (``Meta.app_label``): their tables, migrations and admin
URLs are that app's, while their code lives with the backend.
"""

from django.db import models
from django.db.models.functions import Substr
from django.utils import timezone

from agentstate.identifiers import IdentifierField
from agentstate.tenancy.models import Tenant
from sessions_app.models import SessionOwned

ADK_EVENT_ID_INDEXED = 100  # characters of an event id in the index (at most 400 bytes)


class AdkEvent(SessionOwned):
    """One ADK event of a session, stored whole as the JSON text ADK wrote (so it reads back
    unchanged), with the columns staff, search and erasure need. Its ``user:`` state delta is not
    here: that is user-attributed data (userdata_app), tied to ``(session, seq)``."""

    seq = models.BigIntegerField()  # append order, from the session's counter
    event_id = models.TextField()
    invocation_id = models.TextField(blank=True, default="")
    author = models.TextField(blank=True, default="")
    timestamp = models.FloatField()
    text = models.TextField(blank=True, default="")  # a preview of the content's text parts
    data = models.TextField()  # the event as JSON text, without its user: state delta

    class Meta:
        app_label = "sessions_app"
        verbose_name = "ADK event"
        constraints = [
            # Serves: an event by its append number (the user: delta's link), append order.
            models.UniqueConstraint(fields=["session", "seq"], name="adk_event_unique_seq"),
        ]
        indexes = [
            # Serves: events oldest first, num_recent_events (backwards) and after_timestamp.
            models.Index(fields=["session", "timestamp", "seq"], name="adk_event_order"),
            # Serves: is this event id already in the session (an append of the same id is refused).
            models.Index("session", Substr("event_id", 1, ADK_EVENT_ID_INDEXED), name="adk_event_id"),
        ]

    def __str__(self) -> str:
        return f"ADK event #{self.seq} of session #{self.session_id}"


class AdkAppState(models.Model):
    """ADK's ``app:`` state: shared by every user of one app in one tenant, about no person."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    app_name = IdentifierField()
    state = models.TextField(default="{}")  # JSON text, keys without the prefix
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "sessions_app"
        verbose_name = "ADK app state"
        constraints = [
            # Serves: one app's state (read with every session, locked by each write).
            models.UniqueConstraint(fields=["tenant", "app_name"], name="adk_app_state_unique"),
        ]

    def __str__(self) -> str:
        return f"App state of {self.app_name}"
