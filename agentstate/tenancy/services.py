"""Writes for tenants and their API keys."""
from datetime import datetime

from django.utils.text import slugify

from agentstate.exceptions import InvalidInput
from agentstate.tenancy import selectors
from agentstate.tenancy.models import APIKey, Tenant


def tenant_get_or_create(*, slug: str) -> Tenant:
    """Return the tenant named ``slug``, creating it when new (slugs are lower-case)."""
    clean = slugify(slug)
    if not clean or clean != slug.strip().lower():
        raise InvalidInput.for_field("tenant", "use letters, digits, '-' and '_' only.")
    tenant, _ = Tenant.objects.get_or_create(slug=clean, defaults={"name": slug.strip()})
    return tenant


def api_key_create(
    *, tenant: Tenant, name: str, scope: str = "agent", expires_at: datetime | None = None
) -> tuple[APIKey, str]:
    """Create a key for ``tenant``; returns it with the key itself, which is stored only as a hash
    and cannot be shown again."""
    name = (name or "").strip()
    if not name or len(name) > 50:
        raise InvalidInput.for_field("name", "give a name of 1-50 characters.")
    if scope not in APIKey.Scope.values:
        raise InvalidInput.for_field("scope", f"must be one of: {', '.join(APIKey.Scope.values)}.")
    return APIKey.objects.create_key(tenant=tenant, name=name, scope=scope, expiry_date=expires_at)


def api_key_revoke(*, api_key: APIKey) -> None:
    """Revoke for good. This process forgets the key at once; other processes within
    ``API_KEY_CACHE_SECONDS`` (their verified-key cache)."""
    if not api_key.revoked:
        api_key.revoked = True
        api_key.save(update_fields=["revoked"])
    selectors.api_key_cache_clear()
