"""The erasure workflow (GDPR Art. 17): a request's lifecycle, its preview and its execution.

received -> verified -> executed; on_hold (legal hold) and rejected from any open state; a failed
execution rolled back and can be retried. Each step records who and when (ErasureEvent).

Execution erases, for every ``(tenant, user_id)`` of the request, the user-attributed data and,
with scope "everything", the process state (sessions_app's own service erases it), in one
transaction; then counts what is left in scope and rolls everything back unless it is 0. The
executed request keeps a receipt with counts and keyed hashes, never the plain user id.
"""
from __future__ import annotations

import calendar
from collections import Counter
from datetime import date, datetime

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import DatabaseError, transaction
from django.db.models import CharField, QuerySet
from django.db.models.functions import Cast
from django.utils import timezone

from agentstate.exceptions import Conflict, InvalidInput
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier
from sessions_app import selectors as session_selectors
from sessions_app import services as session_services
from userdata_app import selectors as userdata_selectors
from userdata_app import services as userdata_services
from userdata_app.erased_subjects import grace_until, subject_hash, subjects_lock
from userdata_app.models import ErasedSubject, ErasureEvent, ErasureReceipt, ErasureRequest, ErasureSubject

Status = ErasureRequest.Status
Scope = ErasureRequest.Scope

USER_DATA_CATEGORIES = ("user_data",)
CATEGORIES = USER_DATA_CATEGORIES + session_selectors.PROCESS_STATE_CATEGORIES
OPEN_STATUSES = ErasureRequest.OPEN_STATUSES
MAX_EXTENSION_MONTHS = 2
ERASED_REPR = "[erased]"


class ErasureFailed(Conflict):
    """The erasure was rolled back (something remained in scope, or the database failed)."""

    code = "erasure_failed"


def add_months(day: date, months: int) -> date:
    """The same day ``months`` calendar months later, clamped to the month's end (31 Jan -> 28/29 Feb)."""
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    return day.replace(year=year, month=month, day=min(day.day, calendar.monthrange(year, month)[1]))


def categories_in_scope(scope: str) -> tuple[str, ...]:
    return CATEGORIES if scope == Scope.EVERYTHING else USER_DATA_CATEGORIES


def _actor_name(actor) -> str:
    return actor.get_username() if actor is not None else "manage.py"


def _transition(request: ErasureRequest, *, to_status: str, allowed_from: tuple[str, ...], actor, note: str = "", **fields) -> ErasureRequest:
    """Move ``request`` to ``to_status`` if its current status allows it, recording who and when."""
    if request.status not in allowed_from:
        raise Conflict(
            f"A request that is {request.get_status_display().lower()} cannot become {Status(to_status).label.lower()}."
        )
    now = timezone.now()
    from_status = request.status
    for name, value in fields.items():
        setattr(request, name, value)
    request.status, request.status_changed_at, request.status_changed_by = to_status, now, actor
    request.save()
    ErasureEvent.objects.create(
        request=request, from_status=from_status, to_status=to_status, note=note, actor=actor, actor_name=_actor_name(actor), at=now
    )
    return request


def _clean_reason(value, *, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput.for_field(field, "give a reason.")
    return value.strip()


# --- Lifecycle ----------------------------------------------------------------------------


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
    pairs = {(tenant, clean_identifier(user_id, field="user_id")) for tenant, user_id in subjects}
    if not pairs:
        raise InvalidInput.for_field("subjects", "name at least one (tenant, user_id).")
    received_at = received_at or timezone.now()
    request = ErasureRequest(scope=scope, requested_by=requested_by, reason=reason, received_at=received_at)
    erasure_request_received(request=request, actor=actor)
    ErasureSubject.objects.bulk_create(ErasureSubject(request=request, tenant=t, user_id=u) for t, u in sorted(pairs, key=lambda p: (p[0].pk, p[1])))
    return request


def erasure_request_received(*, request: ErasureRequest, actor=None) -> ErasureRequest:
    """Save a new request (also the admin's add form): due date from receipt, first event."""
    request.due_on = add_months(timezone.localdate(request.received_at), 1)
    request.status = Status.RECEIVED
    request.status_changed_by = actor
    request.save()
    ErasureEvent.objects.create(request=request, to_status=Status.RECEIVED, actor=actor, actor_name=_actor_name(actor))
    return request


def erasure_request_verify(*, request: ErasureRequest, actor=None) -> ErasureRequest:
    """The requester's identity and the subject ids were checked: the request may be executed."""
    if not request.subjects.exclude(user_id="").exists():
        raise Conflict("Add at least one subject (tenant and user id) before verifying.")
    return _transition(request, to_status=Status.VERIFIED, allowed_from=(Status.RECEIVED,), actor=actor)


def erasure_request_extend(*, request: ErasureRequest, months: int, reason: str, actor=None) -> ErasureRequest:
    """Extend the deadline once, by one or two months, with the reason recorded (Art. 12(3))."""
    reason = _clean_reason(reason, field="reason")
    if request.is_extended:
        raise Conflict("The deadline was already extended once.")
    if request.status not in OPEN_STATUSES:
        raise Conflict("Only an open request's deadline can be extended.")
    if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= MAX_EXTENSION_MONTHS:
        raise InvalidInput.for_field("months", f"must be 1 to {MAX_EXTENSION_MONTHS}.")
    request.due_on = add_months(request.due_on, months)
    request.extension_reason = reason
    request.save(update_fields=["due_on", "extension_reason"])
    ErasureEvent.objects.create(
        request=request, from_status=request.status, to_status=request.status, actor=actor, actor_name=_actor_name(actor),
        note=f"Deadline extended by {months} month(s) to {request.due_on:%Y-%m-%d}: {reason}",
    )
    return request


def erasure_request_hold(*, request: ErasureRequest, reason: str, actor=None) -> ErasureRequest:
    """A legal hold: the data must be kept for now; nothing can be executed until released."""
    reason = _clean_reason(reason, field="reason")
    return _transition(
        request, to_status=Status.ON_HOLD, allowed_from=(Status.RECEIVED, Status.VERIFIED, Status.FAILED),
        actor=actor, note=reason, hold_reason=reason,
    )


def erasure_request_release(*, request: ErasureRequest, note: str = "", actor=None) -> ErasureRequest:
    """End a legal hold; the request goes back to received and must be verified again."""
    return _transition(request, to_status=Status.RECEIVED, allowed_from=(Status.ON_HOLD,), actor=actor, note=note)


def erasure_request_reject(*, request: ErasureRequest, reason: str, subject_informed_on: date, actor=None) -> ErasureRequest:
    """Refuse the request, recording why and when the person was told."""
    reason = _clean_reason(reason, field="reason")
    if not isinstance(subject_informed_on, date):
        raise InvalidInput.for_field("subject_informed_on", "give the date the person was told.")
    return _transition(
        request, to_status=Status.REJECTED, allowed_from=OPEN_STATUSES, actor=actor, note=reason,
        rejection_reason=reason, subject_informed_on=subject_informed_on,
    )


# --- Preview and execution ----------------------------------------------------------------


def _subject_counts(*, tenant: Tenant, user_id: str, scope: str) -> dict[str, int]:
    counts = {"user_data": userdata_selectors.subject_user_data_count(tenant=tenant, user_id=user_id)}
    if scope == Scope.EVERYTHING:
        counts.update(session_selectors.subject_process_state_counts(tenant=tenant, user_id=user_id))
    return counts


def subjects_preview(*, subjects: list[tuple[Tenant, str]], scope: str) -> dict[str, int]:
    """Rows per category in ``scope`` held about these ``(tenant, user_id)`` pairs right now."""
    total = Counter({category: 0 for category in categories_in_scope(scope)})
    for tenant, user_id in subjects:
        total.update(_subject_counts(tenant=tenant, user_id=user_id, scope=scope))
    return dict(total)


def _pairs(subjects: list[ErasureSubject]) -> list[tuple[Tenant, str]]:
    return [(subject.tenant, subject.user_id) for subject in subjects]


def erasure_preview(*, request: ErasureRequest) -> dict[str, int]:
    """What executing the request would erase now: rows per category in its scope."""
    if request.status == Status.EXECUTED:
        return dict(request.receipt.counts)
    return subjects_preview(subjects=_pairs(request.subjects.select_related("tenant").exclude(user_id="")), scope=request.scope)


def _scrub_admin_log(objects: QuerySet) -> None:
    """Admin log entries about these objects keep their __str__ and change messages: blank them."""
    LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(objects.model),
        object_id__in=objects.annotate(pk_text=Cast("pk", CharField())).values("pk_text"),
    ).update(object_repr=ERASED_REPR, change_message="")


def _erase_subject(*, tenant: Tenant, user_id: str, scope: str) -> dict[str, int]:
    _scrub_admin_log(userdata_selectors.user_datum_list(tenant=tenant, user_id=user_id))
    counts = {"user_data": userdata_services.subject_user_data_erase(tenant=tenant, user_id=user_id)}
    if scope == Scope.EVERYTHING:
        for objects in session_selectors.subject_admin_objects(tenant=tenant, user_id=user_id):
            _scrub_admin_log(objects)
        counts.update(session_services.subject_process_state_erase(tenant=tenant, user_id=user_id))
    return counts


class _Residue(Exception):
    def __init__(self, residue: dict[str, int]):
        super().__init__(", ".join(f"{n} {category}" for category, n in residue.items() if n))
        self.residue = residue


def erasure_execute(*, request: ErasureRequest, actor=None) -> ErasureReceipt:
    """Erase everything in the request's scope for all its subjects, in one transaction, and
    return the receipt. Only verified (or failed, for a retry) requests run; an executed one
    returns its receipt unchanged. If anything in scope remains afterwards, or the database
    fails, all is rolled back and the request is marked failed with the reason."""
    if settings.ERASURE_HMAC_KEY_ID not in settings.ERASURE_HMAC_KEYS:
        raise Conflict("Erasure is not configured: set AGENTSTATE_ERASURE_HMAC_KEYS and AGENTSTATE_ERASURE_HMAC_KEY_ID.")
    try:
        with transaction.atomic():
            locked = ErasureRequest.objects.select_for_update().get(pk=request.pk)
            if locked.status == Status.EXECUTED:
                return locked.receipt
            if locked.status not in (Status.VERIFIED, Status.FAILED):
                raise Conflict(f"Only a verified request can be executed; this one is {locked.get_status_display().lower()}.")
            subjects = list(locked.subjects.select_related("tenant").exclude(user_id=""))
            if not subjects:
                raise Conflict("The request names no subject.")
            subjects_lock(subjects=_pairs(subjects), exclusive=True)  # in-flight writes land first
            counts = Counter({category: 0 for category in categories_in_scope(locked.scope)})
            for subject in subjects:
                counts.update(_erase_subject(tenant=subject.tenant, user_id=subject.user_id, scope=locked.scope))
            residue = subjects_preview(subjects=_pairs(subjects), scope=locked.scope)
            if any(residue.values()):
                raise _Residue(residue)
            receipt = _record_execution(locked, subjects=subjects, counts=dict(counts), actor=actor)
    except _Residue as exc:
        _mark_failed(request, f"Residue check found data left in scope ({exc}); nothing was erased.", actor)
        raise ErasureFailed(f"Erasure rolled back: data was left in scope ({exc}).") from None
    except DatabaseError as exc:
        _mark_failed(request, f"Database error, nothing was erased: {exc.__class__.__name__}.", actor)
        raise ErasureFailed("Erasure rolled back after a database error; nothing was erased.") from exc
    request.refresh_from_db()
    return receipt


def _record_execution(request: ErasureRequest, *, subjects: list[ErasureSubject], counts: dict[str, int], actor) -> ErasureReceipt:
    """Replace the subjects' ids by keyed hashes, register them, write the receipt."""
    now = timezone.now()
    entries = []
    for subject in subjects:
        subject.hash_key_id, subject.subject_hash = subject_hash(tenant_slug=subject.tenant.slug, user_id=subject.user_id)
        subject.user_id = ""
        entries.append({"tenant": subject.tenant.slug, "key_id": subject.hash_key_id, "hmac_sha256": subject.subject_hash})
    ErasureSubject.objects.bulk_update(subjects, ["user_id", "subject_hash", "hash_key_id"])
    ErasedSubject.objects.bulk_create(
        ErasedSubject(
            subject_hash=subject.subject_hash, key_id=subject.hash_key_id, scope=request.scope, request=request,
            erased_at=now, grace_until=grace_until(erased_at=now),
        )
        for subject in subjects
    )
    receipt = ErasureReceipt.objects.create(
        request=request, scope=request.scope, counts=counts, subjects=entries, executed_at=now,
        executed_by=actor, executed_by_name=_actor_name(actor),
    )
    _transition(
        request, to_status=Status.EXECUTED, allowed_from=(Status.VERIFIED, Status.FAILED), actor=actor,
        note=", ".join(f"{n} {category}" for category, n in counts.items()), failure="",
    )
    return receipt


def _mark_failed(request: ErasureRequest, failure: str, actor) -> None:
    with transaction.atomic():
        locked = ErasureRequest.objects.select_for_update().get(pk=request.pk)
        _transition(locked, to_status=Status.FAILED, allowed_from=(Status.VERIFIED, Status.FAILED), actor=actor, note=failure, failure=failure)
    request.refresh_from_db()


def receipt_document(*, receipt: ErasureReceipt) -> dict:
    """The receipt as shown and exported: no plain subject id anywhere."""
    return {
        "request": receipt.request_id,
        "scope": receipt.scope,
        "executed_at": receipt.executed_at.isoformat(),
        "executed_by": receipt.executed_by_name,
        "counts": receipt.counts,
        "subjects": receipt.subjects,
        "hash": "HMAC-SHA256 over the UTF-8 JSON [tenant slug, user id] without spaces, keyed by key_id",
    }


# --- Re-applying erasures after a restore -------------------------------------------------


def erasures_reapply(*, dry_run: bool = False) -> dict[str, int]:
    """Erase again every registered subject still present in the data (after a backup restore).

    The registry holds only keyed hashes, so the ids cannot be read back from it: instead every
    distinct ``(tenant, user_id)`` in the data is hashed under each configured key and matched
    against the registry. A match is erased again with its recorded scope."""
    registry: dict[tuple[str, str], list[ErasedSubject]] = {}
    for entry in ErasedSubject.objects.all():
        registry.setdefault((entry.key_id, entry.subject_hash), []).append(entry)
    usable_keys = {key_id for key_id, _ in registry} & set(settings.ERASURE_HMAC_KEYS)
    candidates = set(userdata_selectors.subject_ids_iter()) | set(session_selectors.subject_ids_iter())
    tenants = {t.slug: t for t in Tenant.objects.filter(slug__in={slug for slug, _ in candidates})}
    summary = Counter(
        subjects_matched=0,
        registry_entries=sum(len(entries) for entries in registry.values()),
        entries_with_unknown_key=sum(len(entries) for (key_id, _), entries in registry.items() if key_id not in usable_keys),
    )
    now = timezone.now()
    for slug, user_id in sorted(candidates):
        entries = [
            entry
            for key_id in usable_keys
            for entry in registry.get(subject_hash(tenant_slug=slug, user_id=user_id, key_id=key_id), [])
        ]
        if not entries:
            continue
        summary["subjects_matched"] += 1
        scope = Scope.EVERYTHING if any(e.scope == Scope.EVERYTHING for e in entries) else Scope.USER_DATA
        if dry_run:
            counts = _subject_counts(tenant=tenants[slug], user_id=user_id, scope=scope)
        else:
            with transaction.atomic():
                counts = _erase_subject(tenant=tenants[slug], user_id=user_id, scope=scope)
                ErasedSubject.objects.filter(pk__in=[e.pk for e in entries]).update(last_reapplied_at=now)
        summary.update({f"{'would_erase' if dry_run else 'erased'}_{c}": n for c, n in counts.items()})
    return dict(summary)


def erased_subjects_export() -> list[dict]:
    """The registry as JSON-ready entries (keyed hashes only), to keep a copy outside the database
    so that a restore from an older backup does not lose it."""
    return [
        {
            "subject_hash": e.subject_hash, "key_id": e.key_id, "scope": e.scope,
            "erased_at": e.erased_at.isoformat(), "grace_until": e.grace_until.isoformat(),
        }
        for e in ErasedSubject.objects.order_by("erased_at", "id")
    ]


def erased_subjects_import(*, entries: list[dict]) -> int:
    """Add registry entries saved by ``erased_subjects_export`` that the database lacks; returns
    how many were added."""
    existing = set(ErasedSubject.objects.values_list("key_id", "subject_hash", "erased_at"))
    new = []
    for entry in entries:
        try:
            row = ErasedSubject(
                subject_hash=entry["subject_hash"], key_id=entry["key_id"], scope=Scope(entry["scope"]),
                erased_at=datetime.fromisoformat(entry["erased_at"]), grace_until=datetime.fromisoformat(entry["grace_until"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput.for_field("registry", f"not a registry entry: {entry!r} ({exc}).") from None
        if (row.key_id, row.subject_hash, row.erased_at) not in existing:
            existing.add((row.key_id, row.subject_hash, row.erased_at))
            new.append(row)
    ErasedSubject.objects.bulk_create(new)
    return len(new)
