"""Read-your-writes: the request made visible to the router, and a caller who wrote kept on the
primary for ``READ_YOUR_WRITES_SECONDS`` (marked in the shared cache, so every process sees it)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from contextvars import ContextVar

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponseBase

logger = logging.getLogger("agentstate.db_router")
_request: ContextVar[HttpRequest | None] = ContextVar("agentstate_db_request", default=None)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
WROTE_KEY = "agentstate:wrote:{}"


def _caller(request: HttpRequest | None) -> str | None:
    """Who the request acts for: its API key (by the key's public prefix) or its staff user."""
    if request is None:
        return None
    prefix = getattr(getattr(request, "auth", None), "prefix", None)
    if prefix:
        return f"key:{prefix}"
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    return None


def caller_wrote_recently(request: HttpRequest | None) -> bool:
    """Whether the caller wrote in the window, as the shared cache says; without the cache, yes
    (reads go to the primary, never to a replica that may miss the caller's write)."""
    caller = _caller(request)
    if caller is None:
        return False
    try:
        return cache.get(WROTE_KEY.format(caller)) is not None
    except Exception:  # the cache is down or refusing: the safe side
        logger.warning("read-your-writes cache unavailable: reading from the primary", exc_info=True)
        return True


class ReadYourWritesMiddleware:
    """Makes the request visible to the router, and after an unsafe request (which may have
    written) marks its caller in the shared cache so its reads stay on the primary for
    ``READ_YOUR_WRITES_SECONDS``. Costs nothing without replicas. Goes after authentication."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        token = _request.set(request)
        try:
            response = self.get_response(request)
        finally:
            _request.reset(token)
        if settings.DATABASE_REPLICAS and request.method not in SAFE_METHODS:
            caller = _caller(request)
            if caller is not None:
                try:
                    cache.set(WROTE_KEY.format(caller), 1, math.ceil(settings.READ_YOUR_WRITES_SECONDS))
                except Exception:  # the write is committed: its answer goes out whatever the cache
                    logger.warning("read-your-writes cache unavailable: mark not recorded", exc_info=True)
        return response


def current_request() -> HttpRequest | None:
    """The request this code runs for (set by ``ReadYourWritesMiddleware``), or None outside one."""
    return _request.get()
