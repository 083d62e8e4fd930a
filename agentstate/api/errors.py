"""One JSON error shape for every failure a client can cause:
``{"error": {"code": "<machine code>", "message": "<human text>", "fields": {"<field>": ["msg"]}}}``.

DRF's handler still runs first so its headers stay (``WWW-Authenticate`` on 401, ``Retry-After``
on 429); domain errors carry their own status and code (agentstate.exceptions). The Django-level
handlers (``handler404`` ...) answer the same shape for API requests no DRF view saw
(the project's URL configuration calls them for paths under /api/).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from agentstate.api.parsers import PayloadTooLarge
from agentstate.exceptions import DomainError, Held, StorageUnavailable
from agentstate.postgresql.base import ReplicationUnconfirmed
from agentstate.tenancy import selectors as tenancy_selectors
from agentstate.tenancy.models import APIKey


class DatabaseBusy(exceptions.APIException):
    """The database did not serve the request in time: no pooled connection free within PgBouncer's
    query_wait_timeout, a statement or lock timeout, or a connection lost (docs/SCALING.md, "Every wait
    is bounded"). Nothing the caller sent was wrong: the same request may succeed a moment later."""

    status_code = 503
    default_detail = "The database is busy or unreachable; retry after the seconds in Retry-After."
    wait = 2  # DRF's handler turns it into Retry-After


class WriteUnconfirmed(DatabaseBusy):
    """The write committed on the primary but no synchronous standby confirmed it
    (agentstate.postgresql): never a success, and safe to retry with the same client ids."""

    default_detail = "The write was not confirmed by a synchronous standby: it may or may not be kept."
    # About what an HA tool takes to stop waiting for a lost standby or to promote one (docs/SCALING.md).
    wait = 5


class RedisUnavailable(exceptions.APIException):
    """Redis (the working state's store) did not answer within ``REDIS_SOCKET_TIMEOUT`` or could not
    be reached (docs/SCALING.md, "When Redis is down"). The database transaction that needed it was
    rolled back; the same request may succeed a moment later."""

    status_code = 503
    default_detail = "The working-state store (Redis) is unreachable; retry after the seconds in Retry-After."
    wait = 2


class FileStorageUnavailable(exceptions.APIException):
    """The file storage (artifacts' bytes: a directory or an S3 bucket, docs/OPERATIONS.md) failed.
    A write stored nothing; a read found the row but not its bytes; the same request may succeed later."""

    status_code = 503
    default_detail = "The file storage is unreachable; retry after the seconds in Retry-After."
    wait = 5


# DRF exception class -> our code (the first match wins, so subclasses come first).
_CODES: list[tuple[type[exceptions.APIException], str]] = [
    (exceptions.ValidationError, "invalid"),
    (exceptions.ParseError, "invalid"),
    (exceptions.NotAuthenticated, "not_authenticated"),
    (exceptions.AuthenticationFailed, "not_authenticated"),
    (exceptions.PermissionDenied, "permission_denied"),
    (exceptions.NotFound, "not_found"),
    (exceptions.MethodNotAllowed, "method_not_allowed"),
    (exceptions.NotAcceptable, "not_acceptable"),
    (exceptions.UnsupportedMediaType, "unsupported_media_type"),
    (exceptions.Throttled, "throttled"),
    (PayloadTooLarge, "too_large"),
    (DatabaseBusy, "unavailable"),
    (RedisUnavailable, "unavailable"),
    (FileStorageUnavailable, "unavailable"),
]


def error_body(code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested validation errors as ``{"messages[0].role": ["..."]}``."""
    if isinstance(detail, dict):
        flat: dict[str, list[str]] = {}
        for key, value in detail.items():
            if isinstance(key, int):
                name = f"{prefix}[{key}]"
            elif prefix:
                name = f"{prefix}.{key}"
            else:
                name = str(key)
            flat.update(_flatten(value, name))
        return flat
    if isinstance(detail, list) and any(isinstance(item, (dict, list)) for item in detail):
        flat = {}
        for index, item in enumerate(detail):
            if item:
                flat.update(_flatten(item, f"{prefix}[{index}]"))
        return flat
    items = detail if isinstance(detail, list) else [detail]
    return {prefix or "non_field_errors": [str(item) for item in items]}


def _validation_body(exc: exceptions.ValidationError) -> dict[str, Any]:
    fields = _flatten(exc.detail)
    first_field, messages = next(iter(fields.items()), ("", ["Invalid input."]))
    message = messages[0] if first_field == "non_field_errors" else f"{first_field}: {messages[0]}"
    return error_body("invalid", message, fields)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER: domain errors and every DRF error in the one shape."""
    if isinstance(exc, DomainError):
        body = error_body(exc.code, exc.message, exc.fields)
        if isinstance(exc, Held):  # which hold, for the people who placed it: its reference only
            body["error"]["holds"] = exc.references
        return Response(body, status=exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    exc = unavailable(exc) or exc
    if isinstance(exc, IntegrityError) and _key_of_a_deleted_tenant(context["request"]):
        exc = exceptions.AuthenticationFailed("Invalid, revoked or expired API key.")
    response = drf_exception_handler(exc, context)  # maps Http404 / PermissionDenied, sets headers
    if response is None:
        return None  # a server fault: Django's handler500 answers
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.ValidationError):
        response.data = _validation_body(exc)
        return response
    code = next((code for cls, code in _CODES if isinstance(exc, cls)), "error")
    detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
    response.data = error_body(code, str(detail))
    return response


def unavailable(exc: BaseException) -> exceptions.APIException | None:
    """The 503 (with its Retry-After, ``wait``) that ``exc`` means, or None: the database busy or
    unreachable, a commit no standby confirmed, Redis or the file storage down. The one decision
    the API's answers and every other page's (``agentstate.middleware.UnavailableMiddleware``) share."""
    if isinstance(exc, ReplicationUnconfirmed):  # committed on the primary only: never a success
        return WriteUnconfirmed(f"{exc} Retry it: its client ids make a retry store nothing twice.")
    if isinstance(exc, Exception) and _database_unavailable(exc):
        return DatabaseBusy()
    if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
        return RedisUnavailable()
    if isinstance(exc, StorageUnavailable):
        return FileStorageUnavailable()
    return None


# SQLSTATE classes of a database that did not serve in time or went away: connection exception (08,
# PgBouncer's query_wait_timeout among them), insufficient resources (53), operator intervention
# (57: a statement timeout, a shutdown), transaction rollback (40: a deadlock), lock not available
# (55P03), idle-in-transaction timeout (25P03).
_UNAVAILABLE_SQLSTATES = ("08", "53", "57", "40", "55P03", "25P03")


def _database_unavailable(exc: Exception) -> bool:
    """Whether ``exc`` says the database did not serve in time or could not be reached (a
    connection lost before the server said why has no SQLSTATE), not that the request or the
    schema is wrong: those stay server faults."""
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    cause = exc.__cause__
    if isinstance(cause, sqlite3.Error):  # its write lock held past the busy timeout
        return getattr(cause, "sqlite_errorname", "") in {"SQLITE_BUSY", "SQLITE_LOCKED"}
    sqlstate = getattr(cause, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(_UNAVAILABLE_SQLSTATES)


def _key_of_a_deleted_tenant(request: HttpRequest) -> bool:
    """A key this process verified before another one deleted its tenant: its writes fail on the
    tenant's foreign key. Such a key is forgotten, so the next request is refused at once."""
    api_key = getattr(request, "auth", None)
    if not isinstance(api_key, APIKey) or tenancy_selectors.tenant_exists(pk=api_key.tenant_id):
        return False
    tenancy_selectors.api_key_cache_clear()
    return True


# --- Django-level handlers (the project's URLconf): URL not found, body too big before DRF, crashes --


def handler400(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse(error_body("too_large", "The request body is too large."), status=413)
    return JsonResponse(error_body("invalid", "Bad request."), status=400)


def handler403(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("permission_denied", "You do not have permission to do this."), status=403)


def handler404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body("not_found", "Not found."), status=404)


@csrf_exempt  # an API client's write to an unknown URL is a 404, not Django's HTML CSRF page
def api_not_found(request: HttpRequest) -> JsonResponse:
    """The last route under /api/: an unknown URL there answers in the error shape even with DEBUG
    on, where Django would show its HTML debug page (a client would carry the whole page)."""
    return JsonResponse(error_body("not_found", "No API endpoint at this URL."), status=404)


def handler500(request: HttpRequest) -> JsonResponse:
    return JsonResponse(error_body("server_error", "Internal server error."), status=500)


# --- Schema of the error shape (drf-spectacular) -----------------------------------------------


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Machine code: invalid, not_authenticated, not_found, session_exists, ...")
    message = serializers.CharField(help_text="Human-readable explanation.")
    fields = serializers.DictField(  # type: ignore[assignment]  # the error shape's field, not Serializer.fields
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Offending fields (for 400) and what is wrong with each.",
    )
    holds = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="With the code held (409): the references of the legal holds that refused a deletion.",
    )


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()
