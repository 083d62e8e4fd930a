"""Writes to user-attributed data."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from agentstate.exceptions import NotFound
from agentstate.subject_data import rows_hold_check
from agentstate.subjects import USER_DATA, subject_write_check
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_json
from userdata_app.models import UserDatum


@transaction.atomic
def user_datum_set(*, tenant: Tenant, user_id: str, key: str, value: Any) -> UserDatum:
    """Upsert one key of a user (one INSERT ... ON CONFLICT DO UPDATE, safe under concurrency); in
    one transaction with the erased-subject check, so it cannot slip past a running erasure."""
    now = timezone.now()
    user_id = clean_identifier(user_id, field="user_id")
    subject_write_check(tenant=tenant, user_id=user_id, category=USER_DATA)
    datum = UserDatum(
        tenant=tenant,
        user_id=user_id,
        key=clean_identifier(key, field="key"),
        value=clean_json(value, field="value"),
        created_at=now,
        updated_at=now,
    )
    UserDatum.objects.bulk_create(
        [datum],
        update_conflicts=True,
        unique_fields=["tenant", "user_id", "key"],
        update_fields=["value", "updated_at"],
    )
    return UserDatum.objects.get(tenant=tenant, user_id=datum.user_id, key=datum.key)


@transaction.atomic
def user_datum_delete(*, tenant: Tenant, user_id: str, key: str) -> None:
    """Delete one key of a user; a missing key is not found. Refused while a legal hold covers the
    user: checked and deleted in one transaction, so a hold placed meanwhile waits for the delete."""
    rows = UserDatum.objects.filter(tenant=tenant, user_id=user_id, key=key)
    rows_hold_check(rows, tenant_pk=tenant.pk, what="this user's data")
    deleted, _ = rows.delete()
    if not deleted:
        raise NotFound(f"No value stored under {key!r}.")
