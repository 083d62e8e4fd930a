"""Who may see how the service itself is doing (``/metrics``, the details of ``/healthz``): an active
staff login, as for the admin, or a scraper sending ``Authorization: Bearer`` with
``AGENTSTATE_OPERATOR_TOKEN``. API keys, of any scope, reach tenants' data and never this."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest


def is_operator(request: HttpRequest) -> bool:
    """Whether the caller is an operator (the rule above)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return True
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return bool(
        settings.OPERATOR_TOKEN
        and scheme.lower() == "bearer"
        and hmac.compare_digest(token.strip().encode(), settings.OPERATOR_TOKEN.encode())
    )
