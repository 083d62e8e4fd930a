"""Typed errors of the agentstate client, mapped from the server's one JSON error shape.

The server answers every error as ``{"error": {"code", "message", "fields"}}``; the client turns
the status into an exception class and keeps the code, message and fields, so callers can catch
what they can handle (``NotFound``, ``Conflict`` with ``.code``, ...) and let the rest rise.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import httpx


class AgentStateError(Exception):
    """Base of every error the client raises: the server refused the request or could not be reached."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        code: str | None = None,
        fields: dict[str, list[str]] | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.code = code
        self.fields = fields or {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status_code={self.status_code}, code={self.code!r})"


class ValidationError(AgentStateError):
    """400 (also 413 too large, 415 wrong media type): ``fields`` names what the server refused."""


class AuthenticationError(AgentStateError):
    """401: the API key is missing, wrong, revoked or expired."""


class PermissionDenied(AgentStateError):
    """403: the key's scope does not cover this endpoint."""


class NotFound(AgentStateError):
    """404: no such object in the key's tenant."""


class Conflict(AgentStateError):
    """409: ``code`` says which rule: ``session_exists``, ``session_ended``, ``subject_erased`` or ``held``."""


class Held(Conflict, ValueError):
    """409 ``held``: a legal hold keeps the data a delete, clear, rewind or pop would destroy;
    ``holds`` names the holds' references. Also a ``ValueError``: the type ADK's, the OpenAI
    Agents SDK's and LangGraph's own stores raise when they refuse an operation, so the adapters
    raise it as it is (docs/CLIENT.md)."""

    def __init__(self, message: str, *, holds: list[str] | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.holds = holds or []


class PreconditionFailed(AgentStateError):
    """412: the ``expected_version`` sent as If-Match is stale; someone else wrote in between."""


class RateLimited(AgentStateError):
    """429: ``retry_after`` is the number of seconds the server asks to wait (None if it did not say)."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(AgentStateError):
    """5xx: the server failed; the request may or may not have been applied."""


class NetworkError(AgentStateError):
    """The server could not be reached or did not answer in time, after the allowed retries."""


def network_error(exc: httpx.TransportError) -> NetworkError:
    """The error for a request that got no answer, naming where it went (scheme, host, port and
    path): a wrong host or port in the configuration shows in the message."""
    return NetworkError(f"{exc.request.method} {exc.request.url}: {type(exc).__name__}: {exc}")


_BY_STATUS: dict[int, type[AgentStateError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    413: ValidationError,
    415: ValidationError,
    422: ValidationError,
}


def error_from_response(response: httpx.Response) -> AgentStateError:
    """The exception for an error answer, tolerating bodies that are not the API's JSON shape."""
    status = response.status_code
    code, message, fields = _error_parts(response)
    kwargs: dict[str, Any] = {"status_code": status, "code": code, "fields": fields}
    if status == 429:
        return RateLimited(message, retry_after=_retry_after(response.headers.get("Retry-After")), **kwargs)
    if status == 409 and code == "held":
        return Held(message, holds=_holds(response), **kwargs)
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else AgentStateError)
    return cls(message, **kwargs)


def _error_parts(response: httpx.Response) -> tuple[str | None, str, dict[str, list[str]]]:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        fields = error.get("fields")
        return (
            error.get("code"),
            str(error.get("message") or response.reason_phrase),
            fields if isinstance(fields, dict) else {},
        )
    if isinstance(body, dict) and "detail" in body:  # a framework default that escaped the API's handler
        return None, str(body["detail"]), {}
    text = response.text.strip()[:200]
    return None, f"HTTP {response.status_code} {response.reason_phrase}" + (f": {text}" if text else ""), {}


def _holds(response: httpx.Response) -> list[str]:
    error = response.json().get("error", {})
    return [str(reference) for reference in error.get("holds") or []]


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
