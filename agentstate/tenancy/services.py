"""Writes for tenants."""
from agentstate.exceptions import InvalidInput
from agentstate.tenancy.models import Tenant
from django.utils.text import slugify


def tenant_get_or_create(*, slug: str) -> Tenant:
    """Return the tenant named ``slug``, creating it when new (slugs are lower-case)."""
    clean = slugify(slug)
    if not clean or clean != slug.strip().lower():
        raise InvalidInput.for_field("tenant", "use letters, digits, '-' and '_' only.")
    tenant, _ = Tenant.objects.get_or_create(slug=clean, defaults={"name": slug.strip()})
    return tenant
