"""What officers read from the log: who saw a person's data, and the log as an auditor gets it."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.conf import settings
from django.db.models import QuerySet

from userdata_app.access_log.models import AccessEntry
from userdata_app.erasure.registry import subject_hashes_all_keys


def subject_accesses(*, tenant_slug: str, user_id: str) -> QuerySet[AccessEntry]:
    """Every entry about the person (their hash under every receipt key), newest first."""
    if not settings.ERASURE_HMAC_KEYS:
        return AccessEntry.objects.none()
    digests = subject_hashes_all_keys(tenant_slug=tenant_slug, user_id=user_id)
    return AccessEntry.objects.filter(tenant=tenant_slug, subject_hash__in=digests).order_by("-seq")


EXPORTED = ("tenant", "seq", "at", "actor", "action", "purpose", "model", "object_pks", "subject_hash", "key_id",
            "detail", "prev_mac", "mac")  # fmt: skip


def log_lines(*, tenant_slug: str) -> Iterator[str]:
    """The tenant's chain as JSON Lines, oldest first: every field, ``mac`` included, so an auditor
    holding the receipt key can check it, and keep the last ``mac`` to catch a later cut."""
    for entry in AccessEntry.objects.filter(tenant=tenant_slug).order_by("seq").iterator(chunk_size=2000):
        row = {name: getattr(entry, name) for name in EXPORTED}
        row["at"] = entry.at.isoformat()
        yield json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n"
