"""A legal hold and its release: never deleted, only released (who, when, why)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from agentstate.identifiers import IdentifierField
from agentstate.tenancy.models import Tenant


class LegalHold(models.Model):
    """Keeps data from deletion until released. What it covers follows from the columns set:
    the whole tenant (no user id), a person's ``(tenant, user_id)`` (no session), or one session
    (``session_pk``, with its person's user id so the person's pages show it)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    user_id = IdentifierField(blank=True, help_text="Empty: every person of the tenant.")
    session_pk = models.BigIntegerField(null=True, blank=True, help_text="Empty: every session of the person.")
    subject_hash = models.CharField(
        max_length=64, blank=True, editable=False, help_text="Set when the person was erased after the release."
    )
    reference = models.CharField(
        max_length=200,
        help_text="A case or matter number. API clients whose deletes the hold refuses see it: no names.",
    )
    reason = models.TextField(help_text="Why the data must be kept. Only staff see it.")
    placed_at = models.DateTimeField(default=timezone.now, editable=False)
    placed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    placed_by_name = models.CharField(max_length=150, blank=True, editable=False)
    released_at = models.DateTimeField(null=True, blank=True, editable=False)
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    released_by_name = models.CharField(max_length=150, blank=True, editable=False)
    release_reason = models.TextField(blank=True, editable=False)

    class Meta:
        verbose_name = "legal hold"
        permissions = [
            ("place_legalhold", "Can place legal holds"),
            ("release_legalhold", "Can release legal holds"),
        ]
        indexes = [
            # Serves: every hold check (active holds of a tenant, then its person or session).
            models.Index(
                fields=["tenant", "user_id"], condition=models.Q(released_at__isnull=True), name="legal_hold_active"
            ),
        ]

    def __str__(self) -> str:
        return f"Legal hold #{self.pk} ({self.reference})"

    @property
    def is_active(self) -> bool:
        return self.released_at is None

    @property
    def covers(self) -> str:
        """What the hold covers, as staff read it."""
        if self.session_pk is not None:
            return "one session"
        if self.user_id or self.subject_hash:
            return "one person"
        return "the whole tenant"
