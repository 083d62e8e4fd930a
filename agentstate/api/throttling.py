"""Rate limit per API key (or staff user), not per client address: agents share NATs."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from agentstate.tenancy.models import APIKey

if TYPE_CHECKING:  # DRF imports this module while rest_framework.views loads
    from rest_framework.views import APIView

logger = logging.getLogger(__name__)


class ApiKeyRateThrottle(SimpleRateThrottle):
    """Rate from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["api_key"]`` (AGENTSTATE_API_RATE);
    none set means no limit and no cache access."""

    scope = "api_key"

    def get_rate(self) -> str | None:
        # Read per request: settings may change. The ignore: djangorestframework-stubs type the rates as
        # numbers; DRF reads them as "<count>/<period>" strings (parse_rate).
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)  # type: ignore[return-value]

    def allow_request(self, request: Request, view: APIView) -> bool:
        """Without the cache (Redis down or frozen) the request goes through unthrottled: a lost
        counter must not turn into a refused request, nor one more wait for the one after it."""
        try:
            return super().allow_request(request, view)
        except Exception:
            logger.warning("throttle cache unavailable: request not counted", exc_info=True)
            return True

    def get_cache_key(self, request: Request, view: APIView) -> str:
        if isinstance(request.auth, APIKey):
            ident = f"key:{request.auth.prefix}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"ip:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
