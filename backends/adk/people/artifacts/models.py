"""Artifacts: the files an agent saves for a person (Google ADK's ``BaseArtifactService``), one row
per version, the bytes in the storage alias "artifacts" (Django's storage API) under a random name
that says nothing about the person. The models belong to ``userdata_app`` (``Meta.app_label``),
their code lives with the backend."""

from django.db import models
from django.utils import timezone

from agentstate.identifiers import IdentifierField
from agentstate.tenancy.models import SubjectOwned

FILENAME_MAX_LENGTH = 255  # the unique index holds it beside three identifiers: PostgreSQL caps an entry at 2,704 bytes


class Artifact(SubjectOwned):
    """One version of an artifact of ``(tenant, app_name, user_id, session_id, filename)``.
    ``session_id`` is "" for a ``user:`` artifact (the user's, in every session); ``adk_session`` links
    a session-scoped artifact to the ADK session it was saved in, when that session is kept here:
    the artifact goes with it (retention, deletion). ``kind`` says which part of ADK's ``Part``
    it holds: ``inline_data`` and ``text`` keep their bytes in storage (``content``, its size in
    ``size``), ``file_data`` only a URI."""

    class Kind(models.TextChoices):
        INLINE_DATA = "inline_data"
        TEXT = "text"
        FILE_DATA = "file_data"

    app_name = IdentifierField()
    session_id = IdentifierField(blank=True, default="")
    adk_session = models.ForeignKey(
        "sessions_app.Session", null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    filename = models.CharField(max_length=FILENAME_MAX_LENGTH)
    version = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    mime_type = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 (ADK tells None from "")
    file_uri = models.TextField(blank=True, default="")
    content = models.CharField(max_length=255, blank=True, default="", help_text="The file's name in storage.")
    size = models.PositiveBigIntegerField(default=0)
    custom_metadata = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "userdata_app"
        constraints = [
            # Serves: one artifact's versions (load, list versions, delete) and a scope's names.
            models.UniqueConstraint(
                fields=["tenant", "user_id", "app_name", "session_id", "filename", "version"], name="artifact_unique"
            ),
        ]
        indexes = [
            # Serves: a session's artifacts going with it (the cascade from sessions_app.Session).
            models.Index(
                fields=["adk_session"], name="artifact_adk_session", condition=models.Q(adk_session__isnull=False)
            ),
        ]

    def __str__(self) -> str:
        # No filename: it may name the person (staff's admin log keeps this text).
        return f"Artifact #{self.pk}"


class ArtifactFileOwed(models.Model):
    """A file whose row is gone and which storage has not confirmed deleting yet. Written in the
    transaction that deletes the row, removed once storage deleted the file: a storage outage at
    that moment leaves the file listed here, and ``remove_artifact_files`` deletes it later."""

    content = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "userdata_app"
        verbose_name = "artifact file owed"

    def __str__(self) -> str:
        return f"Artifact file #{self.pk}"
