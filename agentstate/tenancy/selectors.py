"""Reads for tenants and API keys.

Verified keys are cached in the process for ``API_KEY_CACHE_SECONDS``, keyed by a SHA-256 of
the full key (the key itself is never kept as a cache key nor logged), so an authenticated
request costs no query while its key is cached. The expiry date the key had when it was verified
is checked on every request. A change made through agentstate.tenancy.services (the admin uses
them) clears this process's cache at once; other processes see revocation, deletion, a new expiry
date or a deleted tenant once their cached entry expires, at most that many seconds later.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time

from django.conf import settings

from agentstate.exceptions import InvalidInput
from agentstate.tenancy.models import APIKey, Tenant

# The library's keys are "<8 letters/digits>.<32 letters/digits>"; anything else is refused
# without a query.
_KEY_FORMAT = re.compile(r"[A-Za-z0-9]{1,16}\.[A-Za-z0-9]{1,128}")
_CACHE_MAX_ENTRIES = 10_000

_cache: dict[str, tuple[float, APIKey]] = {}
_cache_lock = threading.Lock()


def api_key_verify(*, key: str) -> APIKey | None:
    """The usable key (not revoked, not expired) matching ``key``, with its tenant; else None."""
    if not _KEY_FORMAT.fullmatch(key):
        return None
    digest = hashlib.sha256(key.encode()).hexdigest()
    now = time.monotonic()
    cached = _cache.get(digest)
    if cached is not None and cached[0] > now:
        api_key = cached[1]
    else:
        try:
            api_key = APIKey.objects.get_from_key(key)
        except APIKey.DoesNotExist:
            return None
        ttl = settings.API_KEY_CACHE_SECONDS
        if ttl > 0:
            with _cache_lock:
                if len(_cache) >= _CACHE_MAX_ENTRIES:
                    _cache.clear()
                _cache[digest] = (now + ttl, api_key)
    return None if api_key.has_expired else api_key


def api_key_cache_clear() -> None:
    """Forget every verified key of this process (after a revocation, and in tests)."""
    with _cache_lock:
        _cache.clear()


def tenant_exists(*, pk: int) -> bool:
    return Tenant.objects.filter(pk=pk).exists()


def tenant_get(*, slug: str) -> Tenant:
    """The tenant named ``slug``; an unknown or malformed slug is invalid input."""
    valid = isinstance(slug, str) and re.fullmatch(r"[-\w]{1,64}", slug, re.ASCII)
    tenant = Tenant.objects.filter(slug=slug).first() if valid else None
    if tenant is None:
        raise InvalidInput.for_field("tenant", "no tenant with this slug.")
    return tenant
