"""Rate limit per API key (or staff user), not per client address: agents share NATs."""

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from agentstate.tenancy.models import APIKey


class ApiKeyRateThrottle(SimpleRateThrottle):
    """Rate from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["api_key"]`` (AGENTSTATE_API_RATE);
    none set means no limit and no cache access."""

    scope = "api_key"

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)  # read per request: settings may change

    def get_cache_key(self, request, view):
        if isinstance(request.auth, APIKey):
            ident = f"key:{request.auth.prefix}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"ip:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
