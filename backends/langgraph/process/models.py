"""LangGraph's rows: a thread is a Session (framework "langgraph") plus the row below that holds
LangGraph's own thread id, unique per tenant; its checkpoints and pending writes hang off the session.
Identifiers and values arrive already mapped by the client (NUL, lone surrogates and the escape
character itself become "\ue000" + 4 hex digits), so every text column holds what PostgreSQL can
store; docs/CLIENT.md describes the mapping.

The models belong to ``sessions_app`` (``Meta.app_label``): their tables, migrations and admin
URLs are that app's, while their code lives with the backend.
"""

from functools import cached_property
from typing import Any

from django.db import models

from backends.langgraph.process.staff_view import staff_view
from sessions_app.models import Session, SessionOwned


class LangGraphThread(SessionOwned):
    # One thread per session: the session is its key, and ``session.langgraph_thread`` its thread.
    session = models.OneToOneField(Session, on_delete=models.CASCADE, primary_key=True, related_name="langgraph_thread")
    # LangGraph's thread id as given: any length, any character. The key (its SHA-256) is what the
    # unique index holds, so a long id never exceeds an index entry.
    thread_id = models.TextField()
    thread_key = models.CharField(max_length=64)

    class Meta:
        app_label = "sessions_app"
        verbose_name = "LangGraph thread"
        constraints = [
            # Serves: find a thread by tenant and thread id (every saver call starts here).
            models.UniqueConstraint(fields=["tenant", "thread_key"], name="lg_thread_unique_per_tenant"),
        ]

    def __str__(self) -> str:
        return f"LangGraph thread of session #{self.session_id}"


class LangGraphCheckpoint(SessionOwned):
    checkpoint_ns = models.TextField(blank=True, default="")  # "" is the root graph
    checkpoint_id = models.TextField()
    # NULL, not "": LangGraph tells "no parent" and "no run" (None) apart from an empty id.
    parent_checkpoint_id = models.TextField(null=True, blank=True)  # noqa: DJ001
    # Copied out of the metadata: the admin's timeline and delete_for_runs need them as columns.
    run_id = models.TextField(null=True, blank=True)  # noqa: DJ001
    step = models.BigIntegerField(null=True, blank=True)
    source = models.CharField(max_length=32, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    channel_versions = models.JSONField(default=dict, blank=True)
    # The checkpoint exactly as LangGraph's serializer wrote it (type, bytes): the round trip.
    value_type = models.CharField(max_length=32)
    value = models.BinaryField()

    class Meta:
        app_label = "sessions_app"
        verbose_name = "LangGraph checkpoint"
        constraints = [
            # Serves: get one checkpoint; the latest of a namespace; list a namespace newest first
            # (cursor = checkpoint id, which LangGraph makes monotonic).
            models.UniqueConstraint(fields=["session", "checkpoint_ns", "checkpoint_id"], name="lg_checkpoint_unique"),
        ]
        indexes = [
            # Serves: list every namespace of a thread newest first.
            models.Index(fields=["session", "checkpoint_id"], name="lg_checkpoint_thread_order"),
            # Serves: delete_for_runs, which names runs only.
            models.Index(fields=["tenant", "run_id"], name="lg_checkpoint_run"),
            # Serves: a search across all threads of a tenant (list without a thread), newest first.
            models.Index(fields=["tenant", "checkpoint_id"], name="lg_checkpoint_tenant_order"),
        ]

    def __str__(self) -> str:
        return f"LangGraph checkpoint #{self.pk}"

    @cached_property
    def rendered(self) -> Any:
        """The channel values as JSON for staff and subject exports, None without a JSON form: the
        values kept in the checkpoint itself, with those stored by version when the caller attached
        them (``blobs``, from ``selectors.checkpoint_blobs``)."""
        view = staff_view(self.value_type, self.value)
        values = view.get("channel_values") if isinstance(view, dict) else None
        if values is None or not isinstance(values, dict):
            return values
        for blob in getattr(self, "blobs", ()):
            values[blob.channel] = blob.rendered
        return values


class LangGraphBlob(SessionOwned):
    """A channel's value at one version, as LangGraph's database savers keep them: a checkpoint
    names each channel's version (``channel_versions``) and a step stores only the channels it
    changed, so an unchanged history is never sent or stored again. Primitive values (None, text,
    numbers, booleans) stay in the checkpoint's own value, as in ``PostgresSaver``."""

    checkpoint_ns = models.TextField(blank=True, default="")
    channel = models.TextField()
    # The version as text: a string as it is, a number as Python writes it (PostgresSaver's str()).
    version = models.TextField()
    value_type = models.CharField(max_length=32)
    value = models.BinaryField()

    class Meta:
        app_label = "sessions_app"
        verbose_name = "LangGraph channel value"
        constraints = [
            # Serves: a checkpoint's values (session, namespace, channel, version from channel_versions);
            # a retried put stores nothing twice.
            models.UniqueConstraint(fields=["session", "checkpoint_ns", "channel", "version"], name="lg_blob_unique"),
        ]

    def __str__(self) -> str:
        return f"LangGraph channel value #{self.pk}"

    @cached_property
    def rendered(self) -> Any:
        """The value as JSON for staff and subject exports, None without a JSON form."""
        return staff_view(self.value_type, self.value)


class LangGraphWrite(SessionOwned):
    """A pending write, keyed as LangGraph keys it: (thread, namespace, checkpoint, task, idx)."""

    checkpoint_ns = models.TextField(blank=True, default="")
    checkpoint_id = models.TextField()
    task_id = models.TextField()
    task_path = models.TextField(blank=True, default="")
    idx = models.IntegerField()
    channel = models.TextField()
    value_type = models.CharField(max_length=32)
    value = models.BinaryField()

    class Meta:
        app_label = "sessions_app"
        verbose_name = "LangGraph write"
        constraints = [
            # Serves: a retried put_writes (idempotent on this key) and the writes of the
            # checkpoints of one page (session, checkpoint_id IN ...).
            models.UniqueConstraint(
                fields=["session", "checkpoint_id", "checkpoint_ns", "task_id", "idx"], name="lg_write_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"LangGraph write #{self.pk}"

    @cached_property
    def rendered(self) -> Any:
        """The value as JSON for staff and subject exports, None without a JSON form."""
        return staff_view(self.value_type, self.value)
