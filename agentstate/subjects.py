"""Data subjects as the platform knows them: a ``(tenant, user_id)`` pair, the lock that orders
writes about a subject with that subject's erasure, and the guard every create path consults.

The guard's rule (refuse writes that would recreate an erased subject's data) belongs to the
erasure workflow in ``userdata_app``, which ``sessions_app`` must not import. The platform defines
the call here and the project wires the implementation in with the
``SUBJECT_WRITE_GUARD`` setting, so the layers stay one-way.
"""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from agentstate.tenancy.models import Tenant

# What a write recreates: user-attributed data is erased by either scope, process state only by
# the scope "everything".
USER_DATA = "user_data"
PROCESS_STATE = "process_state"


class SubjectWriteGuard(Protocol):
    def __call__(self, *, tenant: Tenant, user_id: str, category: str) -> None: ...


def subject_canonical(*, tenant_slug: str, user_id: str) -> bytes:
    """The subject as bytes, the one form that locks and keyed hashes are computed over."""
    return json.dumps([tenant_slug, user_id], ensure_ascii=False, separators=(",", ":")).encode()


def subjects_lock(*, subjects: list[tuple[Tenant, str]], exclusive: bool) -> None:
    """Inside a transaction, serialise an erasure with the writes that could recreate its
    subjects' data: writers share a subject's lock, the erasure holds it alone. A write then
    either commits before the erasure starts (and is erased with the rest) or checks the registry
    after the erasure committed (and is refused). A PostgreSQL advisory lock per subject, taken in
    key order and released at commit; SQLite's IMMEDIATE transactions already serialise writers."""
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


@lru_cache(maxsize=1)
def _guard(path: str) -> SubjectWriteGuard:
    return import_string(path)


def subject_write_check(*, tenant: Tenant, user_id: str, category: str) -> None:
    """Called inside the transaction of every write that creates ``category`` data for a subject;
    raises (``SubjectErased``) when the configured guard refuses it."""
    _guard(settings.SUBJECT_WRITE_GUARD)(tenant=tenant, user_id=user_id, category=category)
