"""User-attributed data: facts about people, kept apart from process state.

No foreign key points into sessions_app: deleting a session never touches user data, and
erasing a person's data never cascades into process state by accident.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from agentstate.identifiers import IdentifierField
from agentstate.tenancy.models import SubjectOwned, Tenant


class UserDatum(SubjectOwned):
    key = IdentifierField()
    value = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "user data"
        verbose_name_plural = "user data"
        constraints = [
            # Serves: get one key, list a user's keys in key order, erase a user's data.
            models.UniqueConstraint(fields=["tenant", "user_id", "key"], name="user_datum_unique_key"),
        ]
        indexes = [
            # Serve: the admin's exact search by user id or key across tenants (the constraint's
            # index leads with the tenant). Updates change the value only, never these columns.
            models.Index(fields=["user_id"], name="user_datum_user_id"),
            models.Index(fields=["key"], name="user_datum_key"),
        ]

    def __str__(self) -> str:
        # The key only: user ids and values are personal data and must stay out of admin logs.
        return f"User datum #{self.pk} ({self.key})"


class ErasureRequest(models.Model):
    """A data subject's request to erase what the service holds about them (GDPR Art. 17).

    Lifecycle (userdata_app.erasure): received -> verified -> executed, or on hold / rejected;
    a failed execution changes nothing and can be retried. ``__str__`` and every free-text field
    staff fill in must not identify the subject: the admin log keeps them.
    """

    class Scope(models.TextChoices):
        USER_DATA = "user_data", "User-attributed data only (process state kept)"
        EVERYTHING = "everything", "Everything held about the subject"

    class Status(models.TextChoices):
        RECEIVED = "received", "Received"
        VERIFIED = "verified", "Verified"
        EXECUTED = "executed", "Executed"
        ON_HOLD = "on_hold", "On hold"
        REJECTED = "rejected", "Rejected"
        FAILED = "failed", "Failed"

    # Not yet answered: counted as open on the dashboard, overdue once past ``due_on``.
    OPEN_STATUSES = (Status.RECEIVED, Status.VERIFIED, Status.ON_HOLD, Status.FAILED)

    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.USER_DATA)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED, editable=False)
    requested_by = models.CharField(
        max_length=200,
        blank=True,
        help_text="How the request reached you (e.g. a ticket number). Not the subject's name or e-mail.",
    )
    reason = models.TextField(blank=True, help_text="Notes on the request. Do not enter personal data.")
    received_at = models.DateTimeField(default=timezone.now)
    due_on = models.DateField(editable=False, help_text="One calendar month after receipt; extendable once.")
    extension_reason = models.TextField(blank=True, editable=False)
    hold_reason = models.TextField(blank=True, editable=False)
    rejection_reason = models.TextField(blank=True, editable=False)
    subject_informed_on = models.DateField(
        null=True, blank=True, editable=False, help_text="When the person was told of the rejection."
    )
    failure = models.TextField(blank=True, editable=False, help_text="Why the last execution was rolled back.")
    storage_pending = models.TextField(
        blank=True,
        editable=False,
        help_text="Copies of erased rows the database may still hold outside its live tables (SQLite's WAL, "
        "PostgreSQL's statistics): recorded with the erasure, cleared once the clean-up after its commit has run; "
        "`manage.py erasure_storage_cleanup` finishes what is left. Empty when none.",
    )
    status_changed_at = models.DateTimeField(default=timezone.now, editable=False)
    status_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )

    class Meta:
        permissions = [
            # The Compliance group's decisions on a request (docs/COMPLIANCE.md): "change" alone
            # lets staff edit a received request's details, not decide on it.
            ("review_erasure", "Can verify, extend, hold, release and reject erasure requests"),
            ("execute_erasure", "Can execute erasure requests"),
            ("export_subject_data", "Can export everything held about a subject"),
        ]
        indexes = [
            # Serves: open requests by due date (dashboard, overdue list).
            models.Index(fields=["status", "due_on"], name="erasure_status_due"),
        ]

    def __str__(self) -> str:
        return f"Erasure request #{self.pk}"

    @property
    def is_extended(self) -> bool:
        return bool(self.extension_reason)

    @property
    def is_overdue(self) -> bool:
        return self.status in self.OPEN_STATUSES and self.due_on < timezone.localdate()


class RequestSubject(models.Model):
    """One ``(tenant, user_id)`` a person's request covers: a bare user id means nothing across
    tenants. Erasure and access requests list their subjects the same way."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    user_id = IdentifierField(blank=True)

    class Meta:
        abstract = True


class ErasureSubject(RequestSubject):
    """A subject of an erasure request. After execution ``user_id`` is blanked and only
    ``subject_hash`` (keyed HMAC) remains."""

    request = models.ForeignKey(ErasureRequest, on_delete=models.CASCADE, related_name="subjects")
    subject_hash = models.CharField(max_length=64, blank=True, editable=False)
    hash_key_id = models.CharField(max_length=64, blank=True, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["request", "tenant", "user_id"],
                condition=~models.Q(user_id=""),
                name="erasure_subject_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"A subject of erasure request {self.request_id}"


class ErasureEvent(models.Model):
    """One step of a request's lifecycle: who moved it, when, from what to what, and why."""

    request = models.ForeignKey(ErasureRequest, on_delete=models.CASCADE, related_name="events")
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16)
    note = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True, help_text="Kept when the staff account is deleted.")
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["request", "at"], name="erasure_event_request")]

    def __str__(self) -> str:
        return f"An event of erasure request {self.request_id}"


class ErasureReceipt(models.Model):
    """Proof of an executed erasure: counts per category and keyed hashes, no subject id."""

    request = models.OneToOneField(ErasureRequest, on_delete=models.PROTECT, related_name="receipt")
    scope = models.CharField(max_length=16, choices=ErasureRequest.Scope.choices)
    counts = models.JSONField(default=dict)
    subjects = models.JSONField(default=list, help_text='[{"tenant": slug, "hmac_sha256": hex, "key_id": id}]')
    withheld = models.JSONField(
        default=list,
        blank=True,
        help_text='Kept by legal holds: [{"tenant", "hmac_sha256", "key_id", "holds": [reference], "whole", "counts"}]',
    )
    executed_at = models.DateTimeField(default=timezone.now)
    executed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    executed_by_name = models.CharField(max_length=150, blank=True)

    def __str__(self) -> str:
        return f"Receipt of erasure request {self.request_id}"


class ErasedSubject(models.Model):
    """Registry of erased subjects by keyed hash: lets ``reapply_erasures`` erase them again after a
    backup restore, and refuses writes that would recreate their data during the grace period."""

    subject_hash = models.CharField(max_length=64)
    key_id = models.CharField(max_length=64)
    scope = models.CharField(max_length=16, choices=ErasureRequest.Scope.choices)
    request = models.ForeignKey(ErasureRequest, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    erased_at = models.DateTimeField(default=timezone.now)
    grace_until = models.DateTimeField()
    last_reapplied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # Serves: the grace-period check on create paths and the match in reapply_erasures.
            models.Index(fields=["subject_hash", "grace_until"], name="erased_subject_hash"),
        ]

    def __str__(self) -> str:
        return f"Erased subject #{self.pk}"


class AccessRequest(models.Model):
    """A data subject's request for a copy of what the service holds about them (GDPR Art. 15),
    answered with the subject export (JSON and a printable document). Its own workflow, apart from
    erasure: received -> verified (identity checked: how, by whom, when) -> fulfilled, or rejected;
    due ``ACCESS_REQUEST_DUE_MONTHS`` (one) calendar month after receipt (Art. 12(3)). Like an
    erasure request, ``__str__`` and the free-text fields must not identify the subject."""

    class Status(models.TextChoices):
        RECEIVED = "received", "Received"
        VERIFIED = "verified", "Identity verified"
        FULFILLED = "fulfilled", "Fulfilled"
        REJECTED = "rejected", "Rejected"

    # Not yet answered: counted as open on the dashboard, overdue once past ``due_on``.
    OPEN_STATUSES = (Status.RECEIVED, Status.VERIFIED)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED, editable=False)
    requester = models.CharField(
        max_length=200,
        blank=True,
        help_text="Who asked: the person themselves, or who acts for them (e.g. “their lawyer”). No names or e-mails.",
    )
    reference = models.CharField(max_length=200, blank=True, help_text="Your ticket or case number.")
    notes = models.TextField(blank=True, help_text="Notes on the request. Do not enter personal data.")
    received_at = models.DateTimeField(default=timezone.now)
    due_on = models.DateField(editable=False, help_text="One calendar month after receipt (GDPR Art. 12(3)).")
    identity_check = models.TextField(
        "identity verified how", blank=True, editable=False, help_text="How the requester's identity was checked."
    )
    verified_at = models.DateTimeField(null=True, blank=True, editable=False)
    verified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    verified_by_name = models.CharField("verified by", max_length=150, blank=True, editable=False)
    fulfilled_at = models.DateTimeField(null=True, blank=True, editable=False)
    fulfilled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    fulfilled_by_name = models.CharField("fulfilled by", max_length=150, blank=True, editable=False)
    rejection_reason = models.TextField(blank=True, editable=False)
    status_changed_at = models.DateTimeField(default=timezone.now, editable=False)
    status_changed_by_name = models.CharField("status changed by", max_length=150, blank=True, editable=False)

    class Meta:
        permissions = [
            ("review_access_request", "Can verify, fulfil and reject subject-access requests"),
        ]
        indexes = [
            # Serves: open requests by due date (dashboard, overdue list).
            models.Index(fields=["status", "due_on"], name="access_status_due"),
        ]

    def __str__(self) -> str:
        return f"Access request #{self.pk}"

    @property
    def is_overdue(self) -> bool:
        return self.status in self.OPEN_STATUSES and self.due_on < timezone.localdate()


class AccessSubject(RequestSubject):
    """A subject of an access request: whose data its export holds."""

    request = models.ForeignKey(AccessRequest, on_delete=models.CASCADE, related_name="subjects")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["request", "tenant", "user_id"], name="access_subject_unique"),
        ]

    def __str__(self) -> str:
        return f"Subject #{self.pk} of access request #{self.request_id}"
