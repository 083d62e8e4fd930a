"""User-attributed data: facts about people, kept apart from process state.

No foreign key points into sessions_app: deleting a session never touches user data, and
erasing a person's data never cascades into process state by accident.
"""
from django.conf import settings
from django.db import models
from django.utils import timezone

from agentstate.tenancy.models import Tenant


class UserDatum(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=128)
    key = models.CharField(max_length=128)
    value = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "user datum"
        verbose_name_plural = "user data"
        constraints = [
            # Serves: get one key, list a user's keys in key order, erase a user's data.
            models.UniqueConstraint(fields=["tenant", "user_id", "key"], name="user_datum_unique_key"),
        ]

    def __str__(self) -> str:
        # The key only: user ids and values are personal data and must stay out of admin logs.
        return f"User datum #{self.pk} ({self.key})"


class ErasureRequest(models.Model):
    """A data subject's request to erase what the service holds about them (GDPR Art. 17)."""

    class Scope(models.TextChoices):
        USER_DATA = "user_data", "User-attributed data only"
        EVERYTHING = "everything", "Everything held about the subject"

    class Status(models.TextChoices):
        RECEIVED = "received", "Received"
        VERIFIED = "verified", "Verified"
        EXECUTED = "executed", "Executed"
        ON_HOLD = "on_hold", "On hold"
        REJECTED = "rejected", "Rejected"
        FAILED = "failed", "Failed"

    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.USER_DATA)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    requested_by = models.CharField(max_length=200, blank=True, help_text="Who asked (the subject or their agent).")
    reason = models.TextField(blank=True)
    received_at = models.DateTimeField(default=timezone.now)
    status_changed_at = models.DateTimeField(default=timezone.now)
    status_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["status", "received_at"], name="erasure_status_received")]

    def __str__(self) -> str:
        return f"Erasure request #{self.pk}"


class ErasureSubject(models.Model):
    """One ``(tenant, user_id)`` the request covers: a bare user id means nothing across tenants."""

    request = models.ForeignKey(ErasureRequest, on_delete=models.CASCADE, related_name="subjects")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    user_id = models.CharField(max_length=128)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["request", "tenant", "user_id"], name="erasure_subject_unique"),
        ]

    def __str__(self) -> str:
        return f"Subject #{self.pk} of erasure request #{self.request_id}"
