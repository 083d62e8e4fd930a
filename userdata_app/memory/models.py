"""Memory items: what an agent's long-term store keeps about a person (LangGraph's ``BaseStore``).

Every item belongs to one person: its namespace starts with ``("users", <user_id>)``
(``services.namespace_owner``), so erasure and export reach it like any other user data. The
models belong to ``userdata_app`` (``Meta.app_label``), their code lives with the backend.
"""

from django.db import models
from django.utils import timezone

from agentstate.tenancy.models import SubjectOwned

NAMESPACE_MAX_LENGTH = 1024
KEY_MAX_LENGTH = 512


class MemoryItem(SubjectOwned):
    """One item of a namespace: a JSON object under a key. ``namespace`` holds the labels joined
    by ``.`` (a label holds no ``.``, as LangGraph requires), so a namespace prefix is a string
    prefix. ``ttl_minutes`` set: the item expires ``ttl_minutes`` after its last write (or read
    that refreshed it); an expired item is never read and the sweep deletes it."""

    namespace = models.CharField(max_length=NAMESPACE_MAX_LENGTH)
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    value = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    ttl_minutes = models.FloatField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "userdata_app"
        verbose_name = "memory item"
        constraints = [
            # Serves: get one item; put (an upsert on it); a namespace prefix (a string prefix).
            models.UniqueConstraint(fields=["tenant", "namespace", "key"], name="memory_item_unique"),
        ]
        indexes = [
            # Serves: a subject's rows (erasure, export, counts).
            models.Index(fields=["tenant", "user_id"], name="memory_item_subject"),
            # Serves: the sweep of expired items.
            models.Index(fields=["expires_at"], name="memory_item_expires_at"),
        ]

    def __str__(self) -> str:
        # No namespace or key: they name the person (staff's admin log keeps this text).
        return f"Memory item #{self.pk}"
