"""Placing and releasing legal holds, and the lock that orders a placement with every deletion.

The order (docs/DESIGN.md, "Legal holds"): a deletion takes the tenant's hold lock shared, then
checks the holds and deletes in the same transaction; a placement takes it alone. So a hold is
either committed before a deletion checks (and the deletion sees it) or placed after the deletion
committed. PostgreSQL: a transaction-scoped advisory lock per tenant; SQLite's IMMEDIATE
transactions already serialise every writer.
"""

from __future__ import annotations

import hashlib

from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from agentstate.exceptions import Conflict, Held, InvalidInput
from agentstate.holds.models import LegalHold
from agentstate.holds.selectors import hold_covering
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier


def holds_lock_key(tenant_pk: int) -> int:
    """The tenant's hold lock: the key of its PostgreSQL advisory lock (a deletion that takes it in a
    statement of its own, ``pg_advisory_xact_lock_shared(key)``, keeps the order above)."""
    return int.from_bytes(
        hashlib.blake2b(f"legal-hold:{tenant_pk}".encode(), digest_size=8).digest(), "big", signed=True
    )


def holds_lock_required() -> None:
    """Refuse, at once, a hold check or a hold lock taken outside a transaction: the lock would end
    with its own statement, so a hold placed before the delete runs would be acknowledged and then
    not seen (a programming error, on every database, not a silent pass)."""
    if not connection.in_atomic_block:
        raise TransactionManagementError(
            "A hold check runs inside the transaction that deletes (transaction.atomic): outside it "
            "the hold lock is gone before the delete."
        )


def holds_lock(*, tenant_pk: int, exclusive: bool) -> None:
    """Inside a transaction: the tenant's hold lock (see the module's docstring), until commit."""
    # Raw: no ORM form (PostgreSQL's transaction-level advisory lock)
    holds_lock_required()
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {'pg_advisory_xact_lock' if exclusive else 'pg_advisory_xact_lock_shared'}(%s)",
            [holds_lock_key(tenant_pk)],
        )


def hold_applying(*, tenant_pk: int, user_id: str = "", session_pk: int | None = None) -> LegalHold | None:
    """Inside the deleting transaction, before it deletes: the tenant's hold lock, then the oldest
    active hold covering the tenant, the person (``user_id``) or the session (``session_pk``)."""
    holds_lock(tenant_pk=tenant_pk, exclusive=False)
    return hold_covering(tenant=tenant_pk, user_id=user_id, session_pk=session_pk)


def hold_check(*, tenant_pk: int, user_id: str = "", session_pk: int | None = None, what: str = "this data") -> None:
    """``hold_applying``, refused: raise ``Held`` when an active hold covers what is deleted."""
    hold = hold_applying(tenant_pk=tenant_pk, user_id=user_id, session_pk=session_pk)
    if hold is not None:
        raise Held.of(hold.reference, what=what)


def _actor_name(actor) -> str:
    return actor.get_username() if actor is not None else "manage.py"


def required(value, *, field: str, max_length: int | None = None) -> str:
    """A text that must be given (stripped): refused, naming the field, when blank or too long."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput.for_field(field, "is required.")
    if max_length is not None and len(value.strip()) > max_length:
        raise InvalidInput.for_field(field, f"at most {max_length} characters.")
    return value.strip()


def legal_hold_clean(*, reference: str, reason: str, user_id: str = "", session_pk: int | None = None) -> dict:
    """A hold's fields checked (the admin's form asks the same): what is wrong, named by field."""
    cleaned = {
        "reference": required(reference, field="reference", max_length=200),
        "reason": required(reason, field="reason"),
        "user_id": clean_identifier(user_id, field="user_id") if user_id else "",
        "session_pk": session_pk,
    }
    if session_pk is not None and not user_id:
        raise InvalidInput.for_field("user_id", "a session's hold names the session's user id.")
    return cleaned


@transaction.atomic
def legal_hold_place(
    *,
    tenant: Tenant,
    reference: str,
    reason: str,
    user_id: str = "",
    session_pk: int | None = None,
    actor=None,
) -> LegalHold:
    """Place a hold on the tenant, on a person (``user_id``) or on one of their sessions (``user_id``
    and ``session_pk``). Deletions that started before it finish first; none after it passes."""
    cleaned = legal_hold_clean(reference=reference, reason=reason, user_id=user_id, session_pk=session_pk)
    holds_lock(tenant_pk=tenant.pk, exclusive=True)
    return LegalHold.objects.create(
        tenant=tenant,
        **cleaned,
        placed_at=timezone.now(),
        placed_by=actor,
        placed_by_name=_actor_name(actor),
    )


@transaction.atomic
def legal_hold_release(*, hold: LegalHold, reason: str, actor=None) -> LegalHold:
    """Release the hold, recording who, when and why; the hold itself stays. Releasing twice is refused."""
    reason = required(reason, field="release_reason")
    locked = LegalHold.objects.select_for_update().get(pk=hold.pk)
    if locked.released_at is not None:
        hold.refresh_from_db()
        raise Conflict(f"Legal hold {locked.reference!r} was already released.")
    locked.released_at, locked.released_by = timezone.now(), actor
    locked.released_by_name, locked.release_reason = _actor_name(actor), reason
    locked.save(update_fields=["released_at", "released_by", "released_by_name", "release_reason"])
    hold.refresh_from_db()
    return hold


def legal_holds_forget_subject(*, tenant: Tenant, user_id: str, subject_hash: str) -> int:
    """An erasure of the person: released holds on them keep the keyed hash instead of the id
    (an active one never meets an erasure: it withholds the person's data)."""
    return LegalHold.objects.filter(tenant=tenant, user_id=user_id, released_at__isnull=False).update(
        user_id="", subject_hash=subject_hash
    )
