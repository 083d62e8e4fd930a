"""Keyed hashes of data subjects, and the grace-period guard against recreating erased data.

A subject is ``(tenant slug, user id)``; its hash is HMAC-SHA256 over the canonical JSON
``["<tenant slug>","<user id>"]`` (UTF-8, no spaces) with a key from
``AGENTSTATE_ERASURE_HMAC_KEYS``, never SECRET_KEY. The hash proves an erasure without keeping
the id; only someone who holds both the key and the id can match it.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.utils import timezone

from agentstate.exceptions import SubjectErased
from agentstate.tenancy.models import Tenant
from userdata_app.models import ErasedSubject, ErasureRequest

# What a write recreates: user-attributed data is erased by either scope, process state only by
# "everything".
USER_DATA = "user_data"
PROCESS_STATE = "process_state"


def subject_canonical(*, tenant_slug: str, user_id: str) -> bytes:
    return json.dumps([tenant_slug, user_id], ensure_ascii=False, separators=(",", ":")).encode()


def subject_hash(*, tenant_slug: str, user_id: str, key_id: str | None = None) -> tuple[str, str]:
    """``(key_id, hex HMAC-SHA256)`` of the subject under ``key_id`` (default: the current key)."""
    keys = settings.ERASURE_HMAC_KEYS
    key_id = key_id or settings.ERASURE_HMAC_KEY_ID
    if key_id not in keys:
        raise ImproperlyConfigured(
            f"No erasure HMAC key {key_id!r}: set AGENTSTATE_ERASURE_HMAC_KEYS and AGENTSTATE_ERASURE_HMAC_KEY_ID."
        )
    digest = hmac.new(keys[key_id].encode(), subject_canonical(tenant_slug=tenant_slug, user_id=user_id), hashlib.sha256)
    return key_id, digest.hexdigest()


def subject_hashes_all_keys(*, tenant_slug: str, user_id: str) -> list[str]:
    """The subject's hash under every configured key (current and retired), to match old entries."""
    return [
        subject_hash(tenant_slug=tenant_slug, user_id=user_id, key_id=key_id)[1] for key_id in settings.ERASURE_HMAC_KEYS
    ]


def grace_until(*, erased_at) -> timezone.datetime:
    return erased_at + timedelta(hours=settings.ERASURE_GRACE_HOURS)


def subjects_lock(*, subjects: list[tuple[Tenant, str]], exclusive: bool) -> None:
    """Inside a transaction, serialise an erasure with the writes that could recreate its
    subjects' data: writers share a subject's lock, the erasure holds it alone. A write then
    either commits before the erasure starts (and is erased with the rest) or checks the registry
    after the erasure committed (and is refused). A PostgreSQL advisory lock per subject, taken in
    key order; SQLite's IMMEDIATE transactions already serialise every writer."""
    if connection.vendor != "postgresql":
        return
    keys = sorted(
        int.from_bytes(
            hashlib.blake2b(subject_canonical(tenant_slug=t.slug, user_id=u), digest_size=8).digest(), "big", signed=True
        )
        for t, u in subjects
    )
    function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    with connection.cursor() as cursor:
        for key in keys:
            cursor.execute(f"SELECT {function}(%s)", [key])


def subject_write_check(*, tenant: Tenant, user_id: str, category: str) -> None:
    """Refuse a write that would recreate ``category`` data of a subject erased less than
    ``AGENTSTATE_ERASURE_GRACE_HOURS`` ago (an agent still running must not undo the erasure).

    Called on create paths only, inside the transaction that writes (it takes the subject's shared
    lock, see ``subjects_lock``); one indexed lookup."""
    if not settings.ERASURE_HMAC_KEYS:
        return
    subjects_lock(subjects=[(tenant, user_id)], exclusive=False)
    erased = ErasedSubject.objects.filter(
        subject_hash__in=subject_hashes_all_keys(tenant_slug=tenant.slug, user_id=user_id),
        grace_until__gt=timezone.now(),
    )
    if category == PROCESS_STATE:
        erased = erased.filter(scope=ErasureRequest.Scope.EVERYTHING)
    found = erased.order_by("-grace_until").values_list("grace_until", flat=True).first()
    if found is not None:
        raise SubjectErased(
            f"This user's data was erased on request; writes that would recreate it are refused until "
            f"{found:%Y-%m-%d %H:%M} UTC."
        )
