"""Memory items: what an agent's long-term store keeps about a person (LangGraph's ``BaseStore``).

Every item belongs to one person: its namespace starts with ``("users", <user_id>)``
(``services.namespace_owner``), so erasure and export reach it like any other user data. The
models belong to ``userdata_app`` (``Meta.app_label``), their code lives with the backend.
"""

from django.db import models
from django.utils import timezone

from agentstate.subject_data import derived_cascade
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


class MemorySource(models.Model):
    """What a memory item was made from: a session (ADK's ``session_id`` under its ``app_name``, or
    a LangGraph ``thread_id``) and, where known, the event, message or checkpoint within it
    (``ref``). ``linked_session`` links the source to the session when it is kept here: deleting the
    session deletes the items made only from it (``services.memory_sources_session_deleted``). A source naming a session
    kept elsewhere stays text."""

    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="sources", db_index=False)
    linked_session = models.ForeignKey(
        "sessions_app.Session", null=True, blank=True, on_delete=derived_cascade, related_name="+", db_index=False
    )
    app_name = models.CharField(max_length=KEY_MAX_LENGTH, blank=True, default="")
    session_id = models.CharField(max_length=KEY_MAX_LENGTH, blank=True, default="")
    thread_id = models.TextField(blank=True, default="")
    ref = models.CharField(max_length=KEY_MAX_LENGTH, blank=True, default="")
    # The session was deleted and the tenant's memory policy kept the item (made only from deleted
    # sessions, it waits for review).
    session_deleted = models.BooleanField(default=False)

    class Meta:
        app_label = "userdata_app"
        verbose_name = "memory source"
        constraints = [
            # Serves: an item's sources (export, the admin, a put adding a source again: idempotent).
            models.UniqueConstraint(
                fields=["item", "app_name", "session_id", "thread_id", "ref"], name="memory_source_unique"
            ),
        ]
        indexes = [
            # Serves: a session's derived memories (its delete, the admin).
            models.Index(
                fields=["linked_session"],
                name="memory_source_session",
                condition=models.Q(linked_session__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"Source #{self.pk} of memory item #{self.item_id}"


class MemoryPolicy(models.Model):
    """The tenant's memory policy (the user-data layer's, not process state's ``RetentionPolicy``):
    ``keep_derived`` keeps a memory whose last source session is deleted, for review (its sources
    marked ``session_deleted``), rather than deleting it with the session."""

    tenant = models.OneToOneField("tenancy.Tenant", on_delete=models.CASCADE, related_name="+")
    keep_derived = models.BooleanField(default=False)

    class Meta:
        app_label = "userdata_app"
        verbose_name = "memory policy"
        verbose_name_plural = "memory policies"

    def __str__(self) -> str:
        return f"Memory policy of tenant #{self.tenant_id}"


class MemoryVector(models.Model):
    """One embedding of a memory item: the vector the caller's embedder made of the text at one
    field ``path`` of its value (LangGraph's ``IndexConfig["fields"]``; a ``[*]`` path gives one
    per element, ``path.0``, ``path.1``, ...), as float32 bytes. The server holds no model: it keeps
    what the client sent and ranks by it (``vectors``). Part of its item: erased with it (the
    cascade), exported in its record."""

    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="vectors", db_index=False)
    path = models.CharField(max_length=KEY_MAX_LENGTH)
    vector = models.BinaryField()

    class Meta:
        app_label = "userdata_app"
        verbose_name = "memory vector"
        constraints = [
            # Serves: an item's vectors (a search's join, a put replacing them, export).
            models.UniqueConstraint(fields=["item", "path"], name="memory_vector_unique"),
        ]

    def __str__(self) -> str:
        return f"Vector #{self.pk} of memory item #{self.item_id}"


class MemoryGeneration(models.Model):
    """A counter the database itself moves on every write to a tenant's memory items or their
    vectors (triggers, migration 0020), in the writing transaction (on PostgreSQL as it commits,
    migration 0021, so that no write holds the row while it runs): a worker's copy of what a scope
    holds (``vector_cache``) is good while the counters it was read with stand. ``bucket`` spreads a
    tenant's people over a few rows (on PostgreSQL a hash of the user id, 64 buckets; SQLite writes
    one at a time anyway: one row) so that a person's search checks their own; it names nobody.
    ``tenant_pk`` is no foreign key: a tenant's deletion deletes its items, whose triggers write
    here, in any order."""

    tenant_pk = models.BigIntegerField()
    bucket = models.SmallIntegerField()
    value = models.BigIntegerField(default=0)

    class Meta:
        app_label = "userdata_app"
        verbose_name = "memory generation"
        constraints = [
            # Serves: the triggers' upsert; a search's read of its scope's counters.
            models.UniqueConstraint(fields=["tenant_pk", "bucket"], name="memory_generation_unique"),
        ]

    def __str__(self) -> str:
        return f"Memory generation of tenant #{self.tenant_pk}, bucket {self.bucket}"
