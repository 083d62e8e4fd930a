"""Executing an erasure request: its preview, its execution in one transaction, its receipt.

Execution erases, for every ``(tenant, user_id)`` of the request, the user-attributed data and,
with scope "everything", the process state — every model the apps declared as holding it
(``agentstate.subject_data``) — in one transaction; then counts what is left in scope and rolls
everything back unless it is 0. The executed request keeps a receipt with counts and keyed hashes,
never the plain user id. Only once that transaction has committed are the copies outside the
database's live rows cleared (working state, statistics, SQLite's log: ``storage``), so a rollback
changes nothing anywhere; the transaction itself records that clean-up as owed on the request, so
that a crash before it has run leaves the request and its receipt saying so.

Legal holds (``agentstate.holds``): what a hold covers is never erased. A request that covers held
data stops (``ErasureHeld``) until whoever executes it chooses to withhold what is held; then the
rest is erased, the receipt lists what was withheld and by which hold, and a person wholly
withheld is not registered as erased, so their data stays writable.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import DatabaseError, transaction
from django.db.models import CharField, QuerySet
from django.db.models.functions import Cast
from django.utils import timezone

from agentstate import subject_data
from agentstate.exceptions import Conflict, DomainError, Held
from agentstate.holds.selectors import holds_on_subject
from agentstate.holds.services import holds_lock, legal_holds_forget_subject
from agentstate.postgresql.base import ReplicationUnconfirmed
from agentstate.subject_data import counts_text
from agentstate.subjects import PROCESS_STATE, USER_DATA, subjects_lock
from agentstate.tenancy.models import Tenant
from agentstate.tenancy.services import api_keys_forget_subject
from sessions_app.working_state import WorkingStateUnavailable
from userdata_app.erasure.lifecycle import actor_name, step_allowed, transition
from userdata_app.erasure.registry import grace_until, subject_hash
from userdata_app.erasure.scope import kinds_in_scope
from userdata_app.erasure.storage import erasure_storage_after_commit, storage_cleanup_owed
from userdata_app.models import ErasedSubject, ErasureReceipt, ErasureRequest, ErasureSubject

Status = ErasureRequest.Status
Scope = ErasureRequest.Scope
ERASED_REPR = "[erased]"


class ErasureFailed(Conflict):
    """The erasure was rolled back (something remained in scope, or the database failed)."""

    code = "erasure_failed"


class ErasureHeld(Held):
    """Legal holds cover data of the request, and nobody chose to withhold it: nothing was erased."""


def database_failure(cause: BaseException) -> str:
    """What went wrong, as an operator reads it: a commit no standby confirmed (it is on the
    primary, which may be lost), or the database failing (a connection lost, a failover)."""
    if isinstance(cause, ReplicationUnconfirmed):
        return "the commit was not confirmed by a synchronous standby"
    return f"the database failed ({type(cause).__name__})"


class ErasureUnconfirmed(DomainError):
    """The erasure's own commit failed or was not confirmed (no standby confirmed it, the connection
    was lost as it committed): it may have committed, data gone and receipt written. The request's
    status is left as the database has it, never marked failed on a guess."""

    status_code = 503
    code = "erasure_unconfirmed"

    def __init__(self, *, request_pk: int, cause: BaseException) -> None:
        super().__init__(
            f"Erasure request {request_pk}: {database_failure(cause)} as the erasure committed, so it may have "
            f"committed (its data erased, its receipt written) or not. Check request {request_pk}'s status once "
            "the database answers: executed means it is done and its receipt kept; verified means nothing was "
            "erased, and executing it again is safe."
        )


@dataclass(frozen=True)
class Withheld:
    """What legal holds keep of one subject in the request's scope: all of it (``whole``: a hold on
    the tenant or the person) or some sessions, rows per category, and the holds' references."""

    tenant: Tenant
    user_id: str
    references: list[str]
    whole: bool
    counts: dict[str, int]

    @property
    def explanation(self) -> str:
        what = "everything in scope" if self.whole else "the held sessions"
        return f"Legal hold {', '.join(self.references)} keeps {what}: {counts_text(self.counts)}."


def subject_counts(
    *,
    tenant: Tenant,
    user_id: str,
    scope: str,
    user_data_existed_at: datetime | None = None,
    process_state_existed_at: datetime | None = None,
) -> dict[str, int]:
    """Rows per category in ``scope`` an erasure would erase (what legal holds keep is not); the
    ``*_existed_at`` limit a category to what existed then."""
    return subject_data.subject_counts(
        tenant=tenant,
        user_id=user_id,
        kinds=kinds_in_scope(scope),
        existed_at={USER_DATA: user_data_existed_at, PROCESS_STATE: process_state_existed_at},
        held=False,
    )


def subjects_preview(*, subjects: list[tuple[Tenant, str]], scope: str) -> dict[str, int]:
    """Rows per category in ``scope`` held about these ``(tenant, user_id)`` pairs right now, less
    what legal holds keep (``subjects_withheld``)."""
    total = Counter(dict.fromkeys(subject_data.categories(*kinds_in_scope(scope)), 0))
    for tenant, user_id in subjects:
        total.update(subject_counts(tenant=tenant, user_id=user_id, scope=scope))
    return dict(total)


def subjects_withheld(*, subjects: list[tuple[Tenant, str]], scope: str) -> list[Withheld]:
    """What active legal holds keep of these subjects in ``scope``: one query per subject, and the
    held rows counted (``subject_data.rows_held``) only for a subject a hold covers. A session hold
    keeps what hangs off the session in any scope (its artifacts, its events' ``user:`` deltas)."""
    withheld = []
    for tenant, user_id in subjects:
        holds = list(holds_on_subject(tenant=tenant, user_id=user_id))
        if not holds:
            continue
        counts = subject_data.subject_counts(tenant=tenant, user_id=user_id, kinds=kinds_in_scope(scope), held=True)
        whole = any(h.session_pk is None for h in holds)
        if whole or any(counts.values()):
            withheld.append(
                Withheld(
                    tenant=tenant,
                    user_id=user_id,
                    references=list(dict.fromkeys(h.reference for h in holds)),
                    whole=whole,
                    counts=counts,
                )
            )
    return withheld


def _pairs(subjects: Iterable[ErasureSubject]) -> list[tuple[Tenant, str]]:
    return [(subject.tenant, subject.user_id) for subject in subjects]


def erasure_withheld(*, request: ErasureRequest) -> list[Withheld]:
    """What legal holds would keep from executing the request now (nothing once executed: its
    receipt says what was withheld)."""
    if request.status == Status.EXECUTED:
        return []
    return subjects_withheld(
        subjects=_pairs(request.subjects.select_related("tenant").exclude(user_id="")), scope=request.scope
    )


def erasure_preview(*, request: ErasureRequest) -> dict[str, int]:
    """What executing the request would erase now: rows per category in its scope, less what legal
    holds keep."""
    if request.status == Status.EXECUTED:
        return dict(request.receipt.counts)
    return subjects_preview(
        subjects=_pairs(request.subjects.select_related("tenant").exclude(user_id="")), scope=request.scope
    )


def _scrub_admin_log(objects: QuerySet) -> None:
    """Admin log entries about these objects keep their __str__ and change messages: blank them.
    Only the admin writes such entries, so a model it does not show has none (no statement)."""
    if not admin.site.is_registered(objects.model):
        return
    LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(objects.model),
        object_id__in=objects.annotate(pk_text=Cast("pk", CharField())).values("pk_text"),
    ).update(object_repr=ERASED_REPR, change_message="")


def erase_subject(
    *,
    tenant: Tenant,
    user_id: str,
    scope: str,
    user_data_existed_at: datetime | None = None,
    process_state_existed_at: datetime | None = None,
) -> dict[str, int]:
    """Erase the subject's data in ``scope`` (the ``*_existed_at`` limit a category to what existed
    then: re-applying after a restore) and scrub the admin log about it; counts per category."""
    return subject_data.subject_erase(
        tenant=tenant,
        user_id=user_id,
        kinds=kinds_in_scope(scope),
        existed_at={USER_DATA: user_data_existed_at, PROCESS_STATE: process_state_existed_at},
        before_delete=_scrub_admin_log,
    )


class _Residue(Exception):
    def __init__(self, residue: dict[str, int]) -> None:
        super().__init__(counts_text({category: n for category, n in residue.items() if n}))
        self.residue = residue


def erasure_execute(*, request: ErasureRequest, actor=None, withhold_held: bool = False) -> ErasureReceipt:
    """Erase everything in the request's scope for all its subjects, in one transaction, and
    return the receipt. Only verified (or failed, for a retry) requests run; an executed one
    returns its receipt unchanged. If anything in scope remains afterwards, or the database
    fails, all is rolled back and the request is marked failed with the reason. While legal holds
    cover some of it, nothing is erased (``ErasureHeld``, the request unchanged) unless
    ``withhold_held``: then all but the held data is erased and the receipt says what was withheld."""
    if settings.ERASURE_HMAC_KEY_ID not in settings.ERASURE_HMAC_KEYS:
        raise Conflict(
            "Erasure is not configured: set AGENTSTATE_ERASURE_HMAC_KEYS and AGENTSTATE_ERASURE_HMAC_KEY_ID."
        )
    committing = False
    try:
        with transaction.atomic():
            locked = ErasureRequest.objects.select_for_update().get(pk=request.pk)
            if locked.status == Status.EXECUTED:
                return locked.receipt
            if not step_allowed(locked, "execute"):
                raise Conflict(
                    f"Only a verified request can be executed; this one is {locked.get_status_display().lower()}."
                )
            subjects = list(locked.subjects.select_related("tenant").exclude(user_id=""))
            if not subjects:
                raise Conflict("The request names no subject.")
            subjects_lock(subjects=_pairs(subjects), exclusive=True)  # in-flight writes land first
            for tenant_pk in sorted({subject.tenant_id for subject in subjects}):
                holds_lock(tenant_pk=tenant_pk, exclusive=False)  # a hold placed from now on waits for us
            withheld = subjects_withheld(subjects=_pairs(subjects), scope=locked.scope)
            if withheld and not withhold_held:
                raise ErasureHeld(
                    "Legal holds cover data of this request, so nothing was erased. "
                    + " ".join(w.explanation for w in withheld)
                    + " Execute it again withholding what is held (it is kept, stays writable, and the receipt "
                    "says so), or once the holds are released.",
                    references=list(dict.fromkeys(r for w in withheld for r in w.references)),
                )
            counts = Counter(dict.fromkeys(subject_data.categories(*kinds_in_scope(locked.scope)), 0))
            for subject in subjects:
                counts.update(erase_subject(tenant=subject.tenant, user_id=subject.user_id, scope=locked.scope))
            residue = subjects_preview(subjects=_pairs(subjects), scope=locked.scope)
            if any(residue.values()):
                raise _Residue(residue)
            receipt = _record_execution(locked, subjects=subjects, counts=dict(counts), actor=actor, withheld=withheld)
            transaction.on_commit(partial(erasure_storage_after_commit, request_pk=locked.pk, scope=locked.scope))
            committing = True  # what fails from here on is the commit: its outcome is unknown
    except _Residue as exc:
        _mark_failed(request, f"Residue check found data left in scope ({exc}); nothing was erased.", actor)
        raise ErasureFailed(f"Erasure rolled back: data was left in scope ({exc}).") from None
    except DatabaseError as exc:
        if committing:
            raise ErasureUnconfirmed(request_pk=request.pk, cause=exc) from exc
        _mark_failed(request, f"Database error, nothing was erased: {exc.__class__.__name__}.", actor)
        raise ErasureFailed("Erasure rolled back after a database error; nothing was erased.") from exc
    except WorkingStateUnavailable as exc:
        _mark_failed(request, f"The working-state store (Redis) did not answer, nothing was erased: {exc}.", actor)
        raise ErasureFailed(
            "Erasure rolled back: the working-state store (Redis) did not answer; nothing was erased."
        ) from exc
    try:
        request.refresh_from_db()
    except DatabaseError:  # committed all the same: as the erasure's transaction left it
        request = locked
    receipt.request = request  # as stored after the commit, with what the clean-up left pending
    return receipt


def _record_execution(
    request: ErasureRequest,
    *,
    subjects: list[ErasureSubject],
    counts: dict[str, int],
    actor,
    withheld: list[Withheld],
) -> ErasureReceipt:
    """Replace the subjects' ids by keyed hashes, register the erased ones (not a subject a hold
    keeps whole: their data stays writable), write the receipt with what was withheld, and record
    the storage clean-up still owed after the commit (``storage``) on the request."""
    now = timezone.now()
    entries, withheld_entries = [], []
    kept = {(w.tenant.pk, w.user_id): w for w in withheld}
    registered = []
    for subject in subjects:
        subject.hash_key_id, subject.subject_hash = subject_hash(
            tenant_slug=subject.tenant.slug, user_id=subject.user_id
        )
        entry = {"tenant": subject.tenant.slug, "key_id": subject.hash_key_id, "hmac_sha256": subject.subject_hash}
        entries.append(entry)
        held = kept.get((subject.tenant_id, subject.user_id))
        if held is not None:
            withheld_entries.append({**entry, "holds": held.references, "whole": held.whole, "counts": held.counts})
        if held is None or not held.whole:
            registered.append(subject)
            legal_holds_forget_subject(
                tenant=subject.tenant, user_id=subject.user_id, subject_hash=subject.subject_hash
            )
            api_keys_forget_subject(tenant=subject.tenant, user_id=subject.user_id)
        subject.user_id = ""
    ErasureSubject.objects.bulk_update(subjects, ["user_id", "subject_hash", "hash_key_id"])
    ErasedSubject.objects.bulk_create(
        ErasedSubject(
            subject_hash=subject.subject_hash,
            key_id=subject.hash_key_id,
            scope=request.scope,
            request=request,
            erased_at=now,
            grace_until=grace_until(erased_at=now),
        )
        for subject in registered
    )
    receipt = ErasureReceipt.objects.create(
        request=request,
        scope=request.scope,
        counts=counts,
        subjects=entries,
        withheld=withheld_entries,
        executed_at=now,
        executed_by=actor,
        executed_by_name=actor_name(actor),
    )
    transition(
        request,
        step="execute",
        actor=actor,
        note=counts_text(counts)
        + "".join(f"; withheld by legal hold {', '.join(w.references)}: {counts_text(w.counts)}" for w in withheld),
        failure="",
        storage_pending=storage_cleanup_owed(scope=request.scope),
    )
    return receipt


def _mark_failed(request: ErasureRequest, failure: str, actor) -> None:
    """Record a rolled-back erasure; if the database fails again, the request stays as it was
    (verified), which is as true: nothing was erased."""
    try:
        with transaction.atomic():
            locked = ErasureRequest.objects.select_for_update().get(pk=request.pk)
            transition(locked, step="fail", actor=actor, note=failure, failure=failure)
        request.refresh_from_db()
    except DatabaseError:
        pass


def signed_with_development_key(*, receipt: ErasureReceipt) -> bool:
    """Whether the receipt's hashes were keyed with DEBUG's development key (quickstart)."""
    return any(entry["key_id"] == settings.ERASURE_DEVELOPMENT_KEY_ID for entry in receipt.subjects)


def receipt_document(*, receipt: ErasureReceipt) -> dict:
    """The receipt as shown and exported: no plain subject id anywhere."""
    request = receipt.request
    return {
        "request": receipt.request_id,
        "requested_by": request.requested_by,
        "received_at": request.received_at.isoformat(),
        "due_on": request.due_on.isoformat(),
        "scope": receipt.scope,
        "executed_at": receipt.executed_at.isoformat(),
        "executed_by": receipt.executed_by_name,
        "counts": receipt.counts,
        "subjects": receipt.subjects,
        "withheld": receipt.withheld,
        "storage_pending": request.storage_pending,
        "hash": "HMAC-SHA256 over the UTF-8 JSON [tenant slug, user id] without spaces, keyed by key_id",
    }
