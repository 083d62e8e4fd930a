"""An erasure request's lifecycle (GDPR Art. 17 and 12(3)): received -> verified -> executed;
on hold (legal hold) and rejected from any open state; a failed execution can be retried. Each
step records who and when (ErasureEvent) and writes its access-log entries (``access_entries``).

``STEPS`` is the one table of which status may move where: the services below apply it, and the
admin shows a button for each step ``step_allowed`` admits.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, datetime

from django.db import transaction
from django.utils import timezone

from agentstate.exceptions import Conflict, InvalidInput
from agentstate.subject_data import subject_id_check
from agentstate.tenancy.models import Tenant
from userdata_app.erasure.access_entries import step_logged, subjects_added_logged
from userdata_app.models import ErasureEvent, ErasureRequest, ErasureSubject

Status = ErasureRequest.Status
Scope = ErasureRequest.Scope
OPEN_STATUSES = ErasureRequest.OPEN_STATUSES
MAX_EXTENSION_MONTHS = 2


@dataclass(frozen=True)
class Step:
    allowed_from: tuple[str, ...]
    to_status: str | None  # None: the status stays (an extension)


STEPS: dict[str, Step] = {
    "verify": Step(allowed_from=(Status.RECEIVED,), to_status=Status.VERIFIED),
    "extend": Step(allowed_from=OPEN_STATUSES, to_status=None),
    "hold": Step(allowed_from=(Status.RECEIVED, Status.VERIFIED, Status.FAILED), to_status=Status.ON_HOLD),
    "release": Step(allowed_from=(Status.ON_HOLD,), to_status=Status.RECEIVED),
    "reject": Step(allowed_from=OPEN_STATUSES, to_status=Status.REJECTED),
    "execute": Step(allowed_from=(Status.VERIFIED, Status.FAILED), to_status=Status.EXECUTED),
    "fail": Step(allowed_from=(Status.VERIFIED, Status.FAILED), to_status=Status.FAILED),
}


def step_allowed(request: ErasureRequest, step: str) -> bool:
    """Whether ``step`` may be taken from the request's status (an extension only once)."""
    return request.status in STEPS[step].allowed_from and not (step == "extend" and request.is_extended)


def add_months(day: date, months: int) -> date:
    """The same day ``months`` calendar months later, clamped to the month's end (31 Jan -> 28/29 Feb)."""
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    return day.replace(year=year, month=month, day=min(day.day, calendar.monthrange(year, month)[1]))


def actor_name(actor) -> str:
    return actor.get_username() if actor is not None else "manage.py"


def _locked(request: ErasureRequest) -> ErasureRequest:
    """Inside a transaction: the request's row, locked and read from the database, so a step is
    decided on the stored status, never on the caller's possibly stale copy."""
    return ErasureRequest.objects.select_for_update().get(pk=request.pk)


def _record(request: ErasureRequest, locked: ErasureRequest, changes: dict, **event) -> None:
    """Save only ``changes`` on the locked row, record the event, and bring the caller's copy up
    to date (it may have been stale)."""
    for name, value in changes.items():
        setattr(locked, name, value)
    locked.save(update_fields=list(changes))
    step_logged(event=ErasureEvent.objects.create(request=locked, **event))
    if request is not locked:
        request.refresh_from_db()


def transition(request: ErasureRequest, *, step: str, actor, note: str = "", **fields) -> ErasureRequest:
    """Take ``step`` (``STEPS``) if the stored status allows it, recording who and when: the row
    is locked and re-read, and only the fields the step changes are written."""
    to_status = STEPS[step].to_status
    if to_status is None:  # an extension keeps the status: erasure_request_extend does it
        raise ValueError(f"step {step!r} changes no status")
    with transaction.atomic():
        locked = _locked(request)
        if not step_allowed(locked, step):
            request.refresh_from_db()
            raise Conflict(
                f"A request that is {locked.get_status_display().lower()} "
                f"cannot become {Status(to_status).label.lower()}."
            )
        now = timezone.now()
        from_status = locked.status
        _record(
            request,
            locked,
            {**fields, "status": to_status, "status_changed_at": now, "status_changed_by": actor},
            from_status=from_status,
            to_status=to_status,
            note=note,
            actor=actor,
            actor_name=actor_name(actor),
            at=now,
        )
    return request


def clean_reason(value, *, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput.for_field(field, "give a reason.")
    return value.strip()


@transaction.atomic
def erasure_request_create(
    *,
    subjects: list[tuple[Tenant, str]],
    scope: str = Scope.USER_DATA,
    requested_by: str = "",
    reason: str = "",
    received_at: datetime | None = None,
    actor=None,
) -> ErasureRequest:
    """Record a request for one person: one or more ``(tenant, user_id)`` pairs (a bare user id
    means nothing across tenants). Due one calendar month after receipt."""
    if scope not in Scope.values:
        raise InvalidInput.for_field("scope", f"must be one of {', '.join(Scope.values)}.")
    pairs = {(tenant, subject_id_check(tenant=tenant, user_id=user_id)) for tenant, user_id in subjects}
    if not pairs:
        raise InvalidInput.for_field("subjects", "name at least one (tenant, user_id).")
    received_at = received_at or timezone.now()
    request = ErasureRequest(scope=scope, requested_by=requested_by, reason=reason, received_at=received_at)
    erasure_request_received(request=request, actor=actor)
    added = ErasureSubject.objects.bulk_create(
        ErasureSubject(request=request, tenant=t, user_id=u) for t, u in sorted(pairs, key=lambda p: (p[0].pk, p[1]))
    )
    erasure_subjects_added(subjects=added, actor=actor)
    return request


def erasure_subjects_added(*, subjects: list[ErasureSubject], actor=None) -> None:
    """People were added to a request (here, or by the admin's form): a step of the request."""
    subjects_added_logged(subjects=subjects, actor_name=actor_name(actor))


def erasure_request_received(*, request: ErasureRequest, actor=None) -> ErasureRequest:
    """Save a new request (also the admin's add form): due date from receipt, first event."""
    request.due_on = add_months(timezone.localdate(request.received_at), 1)
    request.status = Status.RECEIVED
    request.status_changed_by = actor
    request.save()
    step_logged(
        event=ErasureEvent.objects.create(
            request=request, to_status=Status.RECEIVED, actor=actor, actor_name=actor_name(actor)
        )
    )
    return request


def erasure_request_verify(*, request: ErasureRequest, identity_check: str, actor=None) -> ErasureRequest:
    """The requester's identity and the subject ids were checked: the request may be executed. How
    the identity was checked is asked as on an access request, and recorded as the step's note,
    with who and when."""
    identity_check = clean_reason(identity_check, field="identity_check")
    if not request.subjects.exclude(user_id="").exists():
        raise Conflict("Add at least one subject (tenant and user id) before verifying.")
    return transition(request, step="verify", actor=actor, note=identity_check)


def erasure_identity_check(*, request: ErasureRequest) -> str:
    """How the requester's identity was checked: the note of the request's latest verify step."""
    event = request.events.filter(to_status=Status.VERIFIED).order_by("-at", "-id").first()
    return event.note if event else ""


def erasure_request_extend(*, request: ErasureRequest, months: int, reason: str, actor=None) -> ErasureRequest:
    """Extend the deadline once, by one or two months, with the reason recorded (Art. 12(3))."""
    reason = clean_reason(reason, field="reason")
    if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= MAX_EXTENSION_MONTHS:
        raise InvalidInput.for_field("months", f"must be 1 to {MAX_EXTENSION_MONTHS}.")
    with transaction.atomic():
        locked = _locked(request)
        if locked.is_extended or not step_allowed(locked, "extend"):
            request.refresh_from_db()
            raise Conflict(
                "The deadline was already extended once."
                if locked.is_extended
                else "Only an open request's deadline can be extended."
            )
        due_on = add_months(locked.due_on, months)
        _record(
            request,
            locked,
            {"due_on": due_on, "extension_reason": reason},
            from_status=locked.status,
            to_status=locked.status,
            actor=actor,
            actor_name=actor_name(actor),
            note=f"Deadline extended by {months} month(s) to {due_on:%Y-%m-%d}: {reason}",
        )
    return request


def erasure_request_hold(*, request: ErasureRequest, reason: str, actor=None) -> ErasureRequest:
    """A legal hold: the data must be kept for now; nothing can be executed until released."""
    reason = clean_reason(reason, field="reason")
    return transition(request, step="hold", actor=actor, note=reason, hold_reason=reason)


def erasure_request_release(*, request: ErasureRequest, note: str = "", actor=None) -> ErasureRequest:
    """End a legal hold; the request goes back to received and must be verified again."""
    return transition(request, step="release", actor=actor, note=note)


def erasure_request_reject(
    *, request: ErasureRequest, reason: str, subject_informed_on: date, actor=None
) -> ErasureRequest:
    """Refuse the request, recording why and when the person was told."""
    reason = clean_reason(reason, field="reason")
    if not isinstance(subject_informed_on, date):
        raise InvalidInput.for_field("subject_informed_on", "give the date the person was told.")
    return transition(
        request,
        step="reject",
        actor=actor,
        note=reason,
        rejection_reason=reason,
        subject_informed_on=subject_informed_on,
    )
