"""One structured log line per request, tied together by a request id.

The id comes from the caller's ``X-Request-ID`` when it is a plain token (so a proxy's id carries
through), else a fresh one; it is echoed in the response's ``X-Request-ID``. The line holds the
method, the route pattern the request matched (``/api/v1/users/{user_id}/sessions/``, never the path
itself), status, duration and tenant: never paths, headers, query strings or bodies, so user and
session ids, API keys and stored contents stay out of the logs (and an erasure leaves none there).

Django's session, authentication and messages middleware are here too, as subclasses that a
request to the API naming an API key skips: what a login needs, an agent's call does not.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape

from agentstate import metrics
from agentstate.api import errors
from agentstate.api.authentication import carries_key
from agentstate.logging import request_id_var, route_of
from agentstate.postgresql.base import ReplicationUnconfirmed

logger = logging.getLogger("agentstate.request")

REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class RequestLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # From the environ: request.headers would build a dict of every header for this one.
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request_id = incoming if _REQUEST_ID_RE.fullmatch(incoming) else uuid.uuid4().hex
        request.request_id = request_id
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response[REQUEST_ID_HEADER] = request_id
            if response.status_code == 503:
                _unavailable_count(response)
            route = route_of(request)
            logger.info(
                "%s %s %s",
                request.method,
                route or "-",
                response.status_code,
                extra={
                    "method": request.method,
                    "route": route,
                    "status": response.status_code,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                    "tenant": request_tenant_slug(request),
                },
            )
            return response
        finally:
            request_id_var.reset(token)


def request_tenant_slug(request) -> str | None:
    """The tenant the request's API key belongs to, once DRF has authenticated it."""
    tenant = getattr(getattr(request, "auth", None), "tenant", None)
    return getattr(tenant, "slug", None)


def _unavailable_count(response) -> None:
    """Count a 503 answered in the API's error shape, by its code (agentstate.metrics): what the
    service could not serve, as opposed to a probe's own 503."""
    data = getattr(response, "data", None)
    if data is None and not response.streaming and response.get("Content-Type", "").startswith("application/json"):
        try:
            data = json.loads(response.content)
        except ValueError:
            return
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        metrics.UNAVAILABLE_RESPONSES.labels(code=error["code"]).inc()


API_PREFIX = "/api/v1/"


class _LoginOnly:
    """Middleware a login needs and an API key does not: a request to the API that names a key skips
    it. DRF answers such a request by the key alone (``agentstate.api.authentication.carries_key``),
    so the session, the user and the messages store built for it were never read, on every call an
    agent makes (``python -m benchmarks.request_path`` measures what they cost)."""

    get_response: Callable[[HttpRequest], Any]

    def __call__(self, request: HttpRequest) -> Any:
        if request.path_info.startswith(API_PREFIX) and carries_key(request):
            return self.get_response(request)
        return super().__call__(request)  # type: ignore[misc]  # the Django middleware it is mixed into


class SessionMiddleware(_LoginOnly, sessions.SessionMiddleware):
    pass


class AuthenticationMiddleware(_LoginOnly, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(_LoginOnly, messages.MessageMiddleware):
    pass


class UnavailableMiddleware:
    """A page whose view failed because the database (or Redis, or the file storage) is busy,
    unreachable or did not confirm a commit answers 503 with Retry-After, as the API does: during
    a failover staff are told to retry, not shown a server error. The decision is the API's
    (``agentstate.api.errors.unavailable``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception: Exception) -> HttpResponse | None:
        return unavailable_response(request, exception)


def unavailable_response(request, exception: BaseException | None) -> HttpResponse | None:
    """The 503 ``exception`` means, or None: in the API's error shape under /api/, elsewhere a plain
    page (the admin's own pages query the database, which may be what failed)."""
    answer = errors.unavailable(exception) if exception is not None else None
    if answer is None:
        return None
    detail = str(answer.detail)
    if request.path_info.startswith("/api/"):
        response: HttpResponse = JsonResponse(errors.error_body("unavailable", detail), status=503)
    else:
        if isinstance(exception, ReplicationUnconfirmed):  # a form has no client id to make a retry safe
            detail = f"{exception} Check whether it was kept before doing it again."
        title = "Unavailable for a moment: retry shortly"
        response = HttpResponse(
            f"<!doctype html><title>{title}</title><h1>{title}</h1><p>{escape(detail)}</p>", status=503
        )
    response["Retry-After"] = f"{getattr(answer, 'wait', 5):d}"  # as DRF writes it for the API
    return response
