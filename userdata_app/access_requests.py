"""Subject-access requests (GDPR Art. 15): received -> identity verified -> fulfilled, or
rejected; due one calendar month after receipt by default (Art. 12(3), ``ACCESS_REQUEST_DUE_MONTHS``).
Fulfilling means sending the person the export of their data (``access_request_export``), a JSON
document and its printable twin. Dates, subjects and who acted follow the erasure workflow's
rules (``userdata_app.erasure.lifecycle``), whose helpers this module reuses."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agentstate.exceptions import Conflict, InvalidInput
from agentstate.tenancy.models import Tenant
from userdata_app.erasure.lifecycle import actor_name, add_months, clean_reason, subject_id_check
from userdata_app.models import AccessRequest, AccessSubject
from userdata_app.selectors import subject_export_lazy

Status = AccessRequest.Status

# step -> (the statuses it is taken from, the status it leads to)
STEPS: dict[str, tuple[tuple[str, ...], str]] = {
    "verify": ((Status.RECEIVED,), Status.VERIFIED),
    "fulfil": ((Status.VERIFIED,), Status.FULFILLED),
    "reject": (AccessRequest.OPEN_STATUSES, Status.REJECTED),
}


def access_step_allowed(request: AccessRequest, step: str) -> bool:
    return request.status in STEPS[step][0]


def access_request_received(*, request: AccessRequest) -> AccessRequest:
    """Save a new request (also the admin's add form), due the configured months after receipt."""
    request.due_on = add_months(timezone.localdate(request.received_at), settings.ACCESS_REQUEST_DUE_MONTHS)
    request.status = Status.RECEIVED
    request.save()
    return request


@transaction.atomic
def access_request_create(
    *,
    subjects: list[tuple[Tenant, str]],
    requester: str = "",
    reference: str = "",
    notes: str = "",
    received_at: datetime | None = None,
) -> AccessRequest:
    """Record a request for one person's data: one or more ``(tenant, user_id)`` pairs."""
    pairs = {(tenant, subject_id_check(tenant=tenant, user_id=user_id)) for tenant, user_id in subjects}
    if not pairs:
        raise InvalidInput.for_field("subjects", "name at least one (tenant, user_id).")
    request = AccessRequest(
        requester=requester, reference=reference, notes=notes, received_at=received_at or timezone.now()
    )
    access_request_received(request=request)
    AccessSubject.objects.bulk_create(
        AccessSubject(request=request, tenant=t, user_id=u) for t, u in sorted(pairs, key=lambda p: (p[0].pk, p[1]))
    )
    return request


def _transition(request: AccessRequest, *, step: str, actor, **fields) -> AccessRequest:
    """Take ``step`` if the stored status allows it (the row locked and re-read), writing only
    the status, who changed it and when, and ``fields``."""
    allowed_from, to_status = STEPS[step]
    fields = {**fields, "status_changed_at": timezone.now(), "status_changed_by_name": actor_name(actor)}
    with transaction.atomic():
        locked = AccessRequest.objects.select_for_update().get(pk=request.pk)
        if locked.status not in allowed_from:
            request.refresh_from_db()
            raise Conflict(
                f"A request that is {locked.get_status_display().lower()} cannot become "
                f"{Status(to_status).label.lower()}."
            )
        for name, value in {**fields, "status": to_status}.items():
            setattr(locked, name, value)
        locked.save(update_fields=[*fields, "status"])
    request.refresh_from_db()
    return request


def access_request_verify(*, request: AccessRequest, identity_check: str, actor=None) -> AccessRequest:
    """The requester is the person (or acts for them): record how that was checked, by whom, when."""
    identity_check = clean_reason(identity_check, field="identity_check")
    if not request.subjects.exists():
        raise Conflict("Add at least one subject (tenant and user id) before verifying.")
    return _transition(
        request,
        step="verify",
        actor=actor,
        identity_check=identity_check,
        verified_at=timezone.now(),
        verified_by=actor,
        verified_by_name=actor_name(actor),
    )


def access_request_fulfil(*, request: AccessRequest, actor=None) -> AccessRequest:
    """The export was sent to the person: the request is answered."""
    return _transition(
        request,
        step="fulfil",
        actor=actor,
        fulfilled_at=timezone.now(),
        fulfilled_by=actor,
        fulfilled_by_name=actor_name(actor),
    )


def access_request_reject(*, request: AccessRequest, reason: str, actor=None) -> AccessRequest:
    """Refuse the request (identity not established, manifestly unfounded), recording why."""
    return _transition(request, step="reject", actor=actor, rejection_reason=clean_reason(reason, field="reason"))


def access_request_document(*, request: AccessRequest) -> dict:
    """What the person receives: the request's reference and dates, then everything held about its
    subjects (``subject_export_lazy``: lists read lazily, in batches)."""
    if request.status not in (Status.VERIFIED, Status.FULFILLED):
        raise Conflict("Verify the requester's identity before exporting their data.")
    subjects = [(s.tenant, s.user_id) for s in request.subjects.select_related("tenant").order_by("id")]
    return {
        "access_request": {
            "reference": request.reference,
            "received_at": request.received_at.isoformat(),
            "due_on": request.due_on.isoformat(),
        },
        **subject_export_lazy(subjects=subjects),
    }
