"""Writes for tenants and their API keys.

Every write that can stop a key from working (revoke, expiry, delete, deleting its tenant) goes
through here, so this process forgets its verified keys at once; other processes within
``API_KEY_CACHE_SECONDS`` (agentstate.tenancy.selectors).
"""

from datetime import datetime
from typing import cast

from django.utils.text import slugify

from agentstate.exceptions import InvalidInput
from agentstate.tenancy import selectors
from agentstate.tenancy.models import APIKey, Tenant
from agentstate.validation import clean_identifier


def tenant_get_or_create(*, slug: str) -> Tenant:
    """Return the tenant named ``slug``, creating it when new (slugs are lower-case)."""
    clean = slugify(slug)
    if not clean or clean != slug.strip().lower():
        raise InvalidInput.for_field("tenant", "use letters, digits, '-' and '_' only.")
    tenant, _ = Tenant.objects.get_or_create(slug=clean, defaults={"name": slug.strip()})
    return tenant


def _clean_key_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 50:
        raise InvalidInput.for_field("name", "give a name of 1-50 characters.")
    return name


def api_key_create(
    *,
    tenant: Tenant,
    name: str,
    scope: str = "agent",
    expires_at: datetime | None = None,
    user_id: str | None = None,
) -> tuple[APIKey, str]:
    """Create a key for ``tenant`` (for that one person when ``user_id`` is given, kept as typed);
    returns it with the key itself, which is stored only as a hash and cannot be shown again."""
    name = _clean_key_name(name)
    if scope not in APIKey.Scope.values:
        raise InvalidInput.for_field("scope", f"must be one of: {', '.join(APIKey.Scope.values)}.")
    if user_id is not None:
        user_id = clean_identifier(user_id, field="user_id")
    api_key, key = APIKey.objects.create_key(
        tenant=tenant, name=name, scope=scope, expiry_date=expires_at, user_id=user_id
    )
    return cast(APIKey, api_key), key  # the library types its base class


def api_key_revoke(*, api_key: APIKey) -> None:
    """Revoke for good. This process forgets the key at once; other processes within
    ``API_KEY_CACHE_SECONDS`` (their verified-key cache)."""
    if not api_key.revoked:
        api_key.revoked = True
        api_key.save(update_fields=["revoked"])
    selectors.api_key_cache_clear()


def api_key_update(*, api_key: APIKey, name: str, expires_at: datetime | None) -> APIKey:
    """Rename a key or change its expiry (a time in the past stops it), taking effect like a revocation."""
    api_key.name, api_key.expiry_date = _clean_key_name(name), expires_at
    api_key.save(update_fields=["name", "expiry_date"])
    selectors.api_key_cache_clear()
    return api_key


def api_key_delete(*, api_key: APIKey) -> None:
    """Delete a key, taking effect like a revocation (which keeps the key listed: prefer it)."""
    api_key.delete()
    selectors.api_key_cache_clear()


def api_keys_forget_subject(*, tenant: Tenant, user_id: str) -> int:
    """An erasure of the person: the keys scoped to them are deleted (a revoked one would keep
    their id), taking effect like a revocation."""
    deleted = APIKey.objects.filter(tenant=tenant, user_id=user_id).delete()[0]
    if deleted:
        selectors.api_key_cache_clear()
    return deleted


def tenant_delete(*, tenant: Tenant) -> None:
    """Delete a tenant with its keys and everything it stores; its keys stop like revoked ones."""
    tenant.delete()
    selectors.api_key_cache_clear()
