"""The erased-subject registry: keyed hashes of erased subjects, and the grace-period guard
against recreating their data.

A subject is ``(tenant slug, user id)``; its hash is HMAC-SHA256 over the canonical JSON
``["<tenant slug>","<user id>"]`` (UTF-8, no spaces) with a key from
``AGENTSTATE_ERASURE_HMAC_KEYS``, never SECRET_KEY. The hash proves an erasure without keeping
the id; only someone who holds both the key and the id can match it.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import Max
from django.utils import timezone

from agentstate.exceptions import SubjectErased
from agentstate.statements import execute_all
from agentstate.subjects import PROCESS_STATE, subject_canonical, subjects_lock
from agentstate.tenancy.models import Tenant
from userdata_app.models import ErasedSubject, ErasureRequest


def subject_hash(*, tenant_slug: str, user_id: str, key_id: str | None = None) -> tuple[str, str]:
    """``(key_id, hex HMAC-SHA256)`` of the subject under ``key_id`` (default: the current key)."""
    keys = settings.ERASURE_HMAC_KEYS
    key_id = key_id or settings.ERASURE_HMAC_KEY_ID
    if key_id not in keys:
        raise ImproperlyConfigured(
            f"No erasure HMAC key {key_id!r}: set AGENTSTATE_ERASURE_HMAC_KEYS and AGENTSTATE_ERASURE_HMAC_KEY_ID."
        )
    digest = hmac.new(
        keys[key_id].encode(), subject_canonical(tenant_slug=tenant_slug, user_id=user_id), hashlib.sha256
    )
    return key_id, digest.hexdigest()


def subject_hashes_all_keys(*, tenant_slug: str, user_id: str) -> list[str]:
    """The subject's hash under every configured key (current and retired), to match old entries."""
    return [
        subject_hash(tenant_slug=tenant_slug, user_id=user_id, key_id=key_id)[1]
        for key_id in settings.ERASURE_HMAC_KEYS
    ]


def grace_until(*, erased_at: datetime) -> datetime:
    return erased_at + timedelta(hours=settings.ERASURE_GRACE_HOURS)


def erased_subject_write_guard(
    *, tenant: Tenant, user_id: str, category: str, then: tuple[str, list[Any]] | None = None
) -> list[tuple[Any, ...]] | None:
    """Refuse a write that would recreate ``category`` data of a subject erased less than
    ``AGENTSTATE_ERASURE_GRACE_HOURS`` ago (an agent still running must not undo the erasure).

    The implementation of ``agentstate.subjects.subject_write_check`` (registered from
    ``UserdataAppConfig.ready``): called on create paths only, inside the transaction that writes
    (it takes the subject's shared lock, see ``subjects_lock``); one indexed lookup, and on
    PostgreSQL the caller's write ``then`` after it, from ``allowed`` (the same lookup, none found)."""
    postgresql = connection.vendor == "postgresql"
    if not settings.ERASURE_HMAC_KEYS:  # no erasure is recorded without a key: nothing to refuse
        return execute_all((f"WITH allowed AS (SELECT) {then[0]}", then[1]))[0] if postgresql and then else None
    hashes = subject_hashes_all_keys(tenant_slug=tenant.slug, user_id=user_id)
    scopes = [ErasureRequest.Scope.EVERYTHING.value] if category == PROCESS_STATE else ErasureRequest.Scope.values
    now = timezone.now()
    rows = None
    if postgresql:  # the lookup (and the caller's write) ride in the lock's round trip: every create pays it
        check = [hashes, now, scopes]
        statements = [(_GRACE_UNTIL_SQL, check)]
        if then:  # the write reads ``allowed``: one row where the same lookup finds nothing
            statements.append((f"WITH allowed AS (SELECT WHERE NOT EXISTS ({_ERASED_SQL})) {then[0]}", check + then[1]))
        results = subjects_lock(subjects=[(tenant, user_id)], exclusive=False, then=tuple(statements))
        found, rows = results[0][0][0], (results[1] if then else None)
    else:
        found = ErasedSubject.objects.filter(subject_hash__in=hashes, grace_until__gt=now, scope__in=scopes).aggregate(
            until=Max("grace_until")
        )["until"]
    if found is not None:
        raise SubjectErased(
            f"This user's data was erased on request; writes that would recreate it are refused until "
            f"{found:%Y-%m-%d %H:%M} UTC."
        )
    return rows


_ERASED_WHERE = "subject_hash = ANY(%s) AND grace_until > %s AND scope = ANY(%s)"
_ERASED_SQL = f"SELECT FROM {ErasedSubject._meta.db_table} WHERE {_ERASED_WHERE}"
_GRACE_UNTIL_SQL = f"SELECT max(grace_until) FROM {ErasedSubject._meta.db_table} WHERE {_ERASED_WHERE}"  # noqa: S608 (the model's own table)


def subject_ever_erased(*, tenant: Tenant, user_id: str) -> bool:
    """Whether the registry holds the subject at all, grace period over or not: history brought in
    from another store (``import_sessions``) is the erased data itself, never the person's new data."""
    return ErasedSubject.objects.filter(
        subject_hash__in=subject_hashes_all_keys(tenant_slug=tenant.slug, user_id=user_id)
    ).exists()
