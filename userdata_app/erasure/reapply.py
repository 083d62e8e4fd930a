"""After a backup restore: erase again every registered subject the restored data holds, and keep
a copy of the registry outside the database so an older backup cannot lose it."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agentstate.exceptions import InvalidInput
from agentstate.subject_data import subject_ids
from agentstate.tenancy.models import Tenant
from userdata_app.erasure.execution import erase_subject, subject_counts
from userdata_app.erasure.registry import subject_hash
from userdata_app.erasure.storage import storage_cleanup
from userdata_app.models import ErasedSubject, ErasureRequest

Scope = ErasureRequest.Scope


def erasures_reapply(*, dry_run: bool = False) -> dict[str, int]:
    """Erase again every registered subject still present in the data (after a backup restore).

    The registry holds only keyed hashes, so the ids cannot be read back from it: instead every
    distinct ``(tenant, user_id)`` in the data is hashed under each configured key and matched
    against the registry. A match is erased again with its recorded scope, but only what existed
    at the erasure (restored rows: ``erase_subject``'s ``*_existed_at``): data written after
    it, once the grace period had passed, is the person's new data and stays."""
    registry: dict[tuple[str, str], list[ErasedSubject]] = {}
    for entry in ErasedSubject.objects.all():
        registry.setdefault((entry.key_id, entry.subject_hash), []).append(entry)
    usable_keys = {key_id for key_id, _ in registry} & set(settings.ERASURE_HMAC_KEYS)
    candidates = set(subject_ids())
    tenants = {t.slug: t for t in Tenant.objects.filter(slug__in={slug for slug, _ in candidates})}
    summary = Counter(
        subjects_matched=0,
        registry_entries=sum(len(entries) for entries in registry.values()),
        entries_with_unknown_key=sum(
            len(entries) for (key_id, _), entries in registry.items() if key_id not in usable_keys
        ),
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
        everything = [e.erased_at for e in entries if e.scope == Scope.EVERYTHING]
        target: dict[str, Any] = {
            "tenant": tenants[slug],
            "user_id": user_id,
            "scope": Scope.EVERYTHING if everything else Scope.USER_DATA,
            # Every entry covers user data; process state only the "everything" ones. The latest wins.
            "user_data_existed_at": max(e.erased_at for e in entries),
            "process_state_existed_at": max(everything, default=None),
        }
        if dry_run:
            counts = subject_counts(**target)
        else:
            with transaction.atomic():
                counts = erase_subject(**target)
                ErasedSubject.objects.filter(pk__in=[e.pk for e in entries]).update(last_reapplied_at=now)
        summary.update({f"{'would_erase' if dry_run else 'erased'}_{c}": n for c, n in counts.items()})
    result: dict[str, Any] = dict(summary)
    if result["subjects_matched"] and not dry_run:
        result["storage_pending"] = storage_cleanup()
    return result


def erased_subjects_export() -> list[dict]:
    """The registry as JSON-ready entries (keyed hashes only), to keep a copy outside the database
    so that a restore from an older backup does not lose it."""
    return [
        {
            "subject_hash": e.subject_hash,
            "key_id": e.key_id,
            "scope": e.scope,
            "erased_at": e.erased_at.isoformat(),
            "grace_until": e.grace_until.isoformat(),
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
                subject_hash=entry["subject_hash"],
                key_id=entry["key_id"],
                scope=Scope(entry["scope"]),
                erased_at=datetime.fromisoformat(entry["erased_at"]),
                grace_until=datetime.fromisoformat(entry["grace_until"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput.for_field("registry", f"not a registry entry: {entry!r} ({exc}).") from None
        if (row.key_id, row.subject_hash, row.erased_at) not in existing:
            existing.add((row.key_id, row.subject_hash, row.erased_at))
            new.append(row)
    ErasedSubject.objects.bulk_create(new)
    return len(new)
