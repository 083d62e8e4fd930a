"""A tenant's or a person's data in the portable format, and a tenant's brought back from it
(``manage.py export_tenant`` / ``import_tenant``, the subject export's JSON Lines form;
docs/PORTABLE_FORMAT.md). The records are ``agentstate.portable``'s, derived from the map of
people's data; this module adds what only this layer knows: the erased-subject registry, carried
by a tenant's file and consulted for every person an import would write, and the receipt key
ring's fingerprint, without which the registry's keyed hashes cannot be matched.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.db import transaction

from agentstate import portable
from agentstate.portable import PortableError, PortableImportSummary
from agentstate.subject_data import declared
from agentstate.tenancy.models import Tenant
from agentstate.tenancy.services import tenant_get_or_create
from userdata_app.access_log.recorder import subjects_exported
from userdata_app.erasure.reapply import erased_subjects_export, erased_subjects_import
from userdata_app.erasure.registry import subject_ever_erased, subject_hash

REGISTRY = "erased_subjects"  # the registry's records: a category of the file, not of the map
_KEY_RING_LABEL = b"agentstate portable format: receipt key ring"
LOGGED_PER_TRANSACTION = 1000  # access-log entries appended under one lock of the tenant's chain


class KeyRingMismatch(Exception):
    """The file's registry is keyed by a ring this deployment does not hold."""


def receipt_key_ring_fingerprint() -> dict[str, str]:
    """Per key id of ``AGENTSTATE_ERASURE_HMAC_KEYS``, the HMAC-SHA256 of a fixed label under the
    key: two deployments with the same ring give the same fingerprint; the key stays secret."""
    return {
        key_id: hmac.new(key.encode(), _KEY_RING_LABEL, hashlib.sha256).hexdigest()
        for key_id, key in sorted(settings.ERASURE_HMAC_KEYS.items())
    }


def tenant_export_lines(*, tenant: Tenant) -> Iterator[str]:
    """The tenant's file: the header (with the key ring's fingerprint), the whole erased-subject
    registry (keyed hashes: the tenant is inside each), then every person's rows. Streamed."""
    yield portable.line_of(portable.header(scope="tenant", tenant=tenant, receipt_keys=receipt_key_ring_fingerprint()))
    for entry in erased_subjects_export():
        yield portable.line_of({"category": REGISTRY, "record": "erased_subject", **entry})
    for record in portable.records(tenant=tenant):
        yield portable.line_of(record)


def tenant_export_logged(*, tenant: Tenant, actor: str) -> int:
    """A tenant export reads every person's data: the access log gets one entry per person in it,
    as a subject export's (written before the export, as ``export_user``'s). How many people."""
    people = sorted(
        {
            user_id
            for d in declared()
            if not d.via
            for user_id in d.model._default_manager.filter(tenant=tenant)
            .values_list("user_id", flat=True)
            .distinct()
            .order_by()
            .iterator()
        }
    )
    for start in range(0, len(people), LOGGED_PER_TRANSACTION):
        batch = people[start : start + LOGGED_PER_TRANSACTION]
        subjects_exported(actor=actor, subjects=[(tenant, user_id) for user_id in batch], model="", pks=[])
    return len(people)


def subject_export_lines(*, tenant: Tenant, user_id: str) -> Iterator[str]:
    """One person's rows in a tenant: the machine-readable half of a subject access request."""
    yield portable.line_of(portable.header(scope="subject", tenant=tenant, user_id=user_id))
    for record in portable.records(tenant=tenant, user_id=user_id):
        yield portable.line_of(record)


def tenant_import(
    *,
    tenant_slug: str,
    lines: Iterator[str],
    dry_run: bool = False,
    on_unit: Callable[[PortableImportSummary], None] = lambda summary: None,
) -> tuple[PortableImportSummary, int]:
    """Read a file into the tenant (created if missing): the registry's entries first, then every
    person's rows, a person the registry holds (here or in the file) refused. A file keyed by
    another receipt key ring is refused before anything is written. Returns the summary and how
    many registry entries were new."""
    items = portable.lines_read(lines)
    first = next(items, None)
    if first is None:
        raise PortableError(1, "the file is empty.")
    head = portable.header_check(*first)
    _key_ring_check(head.get("receipt_keys", {}))
    stream = portable.Records(items)
    entries: list[dict[str, Any]] = []
    while (ahead := stream.peek()) is not None and ahead[1].get("category") == REGISTRY:
        number, record = stream.take()
        entries.append({"line": number, **record})
    with transaction.atomic():
        if dry_run:
            tenant = Tenant.objects.filter(slug=tenant_slug).first() or Tenant(slug=tenant_slug)
        else:
            tenant = tenant_get_or_create(slug=tenant_slug)
        registered = 0 if dry_run else _registry_import(entries)
    source_slug = head["tenant"]

    def refused(user_id: str) -> bool:
        """Erased here, or in the file's registry under the tenant it came from."""
        from_file = _hashes_in(entries, tenant_slug=source_slug, user_id=user_id)
        return from_file or (tenant.pk is not None and subject_ever_erased(tenant=tenant, user_id=user_id))

    if tenant.pk is None:  # a dry run into a tenant not created: no row has this id, so none is held
        tenant.pk = -1
    try:
        summary = portable.records_import(
            tenant=tenant, items=_rest(stream), refused=refused, dry_run=dry_run, on_unit=on_unit
        )
    except PortableError as exc:
        exc.registered = registered
        raise
    return summary, registered


def _rest(stream: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    while stream.peek() is not None:
        yield stream.take()


def _key_ring_check(ring: Any) -> None:
    """Every key the file's registry may be keyed by must be here, the same key under the same id."""
    here = receipt_key_ring_fingerprint()
    if not isinstance(ring, dict):
        raise PortableError(1, "the header's receipt_keys is not an object.")
    differs = sorted(key_id for key_id, fingerprint in ring.items() if here.get(key_id) != fingerprint)
    if differs:
        raise KeyRingMismatch(
            f"The file was written under another receipt key ring (AGENTSTATE_ERASURE_HMAC_KEYS): key id(s) "
            f"{', '.join(differs)} missing here or holding another key. Its erased-subject registry could not "
            f"be matched, so nothing was imported: configure the same keys first."
        )


def _registry_import(entries: list[dict[str, Any]]) -> int:
    for entry in entries:
        if entry.get("record") != "erased_subject":
            raise PortableError(entry["line"], f"unknown record {entry.get('record')!r} of category {REGISTRY!r}.")
    try:
        return erased_subjects_import(
            entries=[{k: v for k, v in e.items() if k not in {"line", "category", "record"}} for e in entries]
        )
    except Exception as exc:  # the service names the entry it could not read
        raise PortableError(entries[0]["line"], f"the erased-subject registry: {exc}") from None


def _hashes_in(entries: list[dict[str, Any]], *, tenant_slug: str, user_id: str) -> bool:
    for entry in entries:
        key_id = entry.get("key_id")
        if key_id in settings.ERASURE_HMAC_KEYS and subject_hash(
            tenant_slug=tenant_slug, user_id=user_id, key_id=key_id
        )[1] == entry.get("subject_hash"):
            return True
    return False
