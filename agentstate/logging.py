"""JSON log lines that carry the current request id and never the data agents store.

``RequestLogMiddleware`` puts the request id in a context variable; ``RequestContextFilter`` copies
it onto every record logged while the request runs (Django's own ``django.request`` warnings
included), and ``JsonFormatter`` writes one JSON object per line. Exceptions are logged by type,
database error code and stack frames, never by message: database errors quote the values that
caused them, and those values are messages, state or user data.

Django's own request loggers put the path (``Not Found: /api/v1/users/alice/...``), the request
line (the development server) or the Host header (``DisallowedHost``) in their messages: the
formatter writes those records with a message of its own, built from the status and route only.
"""

from __future__ import annotations

import json
import logging
import re
import traceback
from contextvars import ContextVar
from datetime import UTC, datetime
from functools import lru_cache
from http import HTTPStatus

import orjson

request_id_var: ContextVar[str | None] = ContextVar("agentstate_request_id", default=None)

# Attributes a record may carry (from ``extra=``) that are safe to write out.
_SAFE_EXTRA = ("method", "route", "status", "duration_ms", "tenant", "status_code")

# Loggers whose messages quote the request: path, request line, Host header.
_REQUEST_QUOTING = ("django.request", "django.server", "django.security")


def route_of(request) -> str | None:
    """The URL pattern ``request`` matched, as ``/api/v1/users/{user_id}/sessions/``; None when it
    matched none (404s, static files)."""
    match = getattr(request, "resolver_match", None)
    return None if match is None or not match.route else route_template(match.route)


_NAMED_GROUP = re.compile(r"\(\?P<(\w+)>(?:[^()]|\([^()]*\))*\)")
_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


@lru_cache(maxsize=512)
def route_template(route: str) -> str:
    """``re_path``/``path`` patterns as one readable template: groups become ``{name}``."""
    template = _CONVERTER.sub(r"{\1}", _NAMED_GROUP.sub(r"{\1}", route))
    template = template.replace("^", "").replace("$", "").replace("/?", "/")
    return "/" + template.lstrip("/")


class RequestContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            # Django logs 4xx/5xx (django.request) after the middleware has returned: take the id
            # from the request it passes along.
            request = getattr(record, "request", None)
            record.request_id = getattr(request, "request_id", None) or request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": _message(record),
            "request_id": getattr(record, "request_id", None),
        }
        for name in _SAFE_EXTRA:
            if hasattr(record, name):
                entry[name] = getattr(record, name)
        if record.exc_info and record.exc_info[1] is not None:
            entry["exception"] = exception_summary(record.exc_info[1])
        try:  # every request writes a line: orjson encodes it in a tenth of the standard module's time
            return orjson.dumps(entry, default=str).decode()
        except orjson.JSONEncodeError:  # what orjson refuses (a lone surrogate, an integer past 64 bits)
            return json.dumps(entry, default=str, ensure_ascii=False)


def _message(record: logging.LogRecord) -> str:
    if not record.name.startswith(_REQUEST_QUOTING):
        return record.getMessage()
    status = getattr(record, "status_code", None)
    if record.name.startswith("django.security"):
        # DisallowedHost's message quotes the Host header; others quote paths or file names.
        what = record.name.rpartition(".")[2]
        return f"{what}: request refused" + (f" ({status})" if status else "")
    if record.name == "django.server":
        # What reaches here is what the app never answered (DevServerRepeatFilter drops the rest):
        # 'code %d, message %s' quoting a request the server could not parse, or a dropped connection.
        first = record.args[0] if isinstance(record.args, tuple) and record.args else ""
        if isinstance(first, int):
            return f"Unparsable request ({first})"
        return str(record.msg).partition("%")[0].strip() or "Development server error"
    route = route_of(getattr(record, "request", None))
    try:
        phrase = HTTPStatus(status).phrase if isinstance(status, int) else "Request failed"
    except ValueError:
        phrase = "Request failed"
    return f"{phrase}: {route}" if route else phrase


class DevServerRepeatFilter(logging.Filter):
    """runserver (and so quickstart) logs every request line it answered, and the request log
    (agentstate.middleware) already has one line per request: in development each request was
    logged twice. Only what the app never saw stays (an unparsable request, a dropped connection)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != '"%s" %s %s'


class ServerErrorFilter(logging.Filter):
    """gunicorn's error log (logger ``gunicorn.error``, installed by gunicorn.conf.py): its warning
    about a request it refuses quotes the offending request line or header, and a worker's crash
    names the URI. The kind of error stays; what the client sent goes."""

    _QUOTE = re.compile(r"""\s*:?\s*['"].*""", re.DOTALL)

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str):
            return True
        if record.msg.startswith("Invalid request from ip="):
            record.msg, record.args = self._QUOTE.sub("", record.getMessage()), ()
        elif record.msg.startswith("Error handling request %s"):
            record.msg, record.args = "Error handling request (its URI is not logged)", ()
        return True


def exception_summary(exc: BaseException) -> dict:
    """Type, SQLSTATE/constraint of a database error, and where it was raised; no message."""
    summary: dict = {"type": f"{type(exc).__module__}.{type(exc).__qualname__}"}
    diag = getattr(exc.__cause__, "diag", None) or getattr(exc, "diag", None)
    if diag is not None:
        summary["sqlstate"] = getattr(diag, "sqlstate", None)
        summary["constraint"] = getattr(diag, "constraint_name", None)
    summary["frames"] = [
        f"{frame.filename}:{frame.lineno} in {frame.name}" for frame in traceback.extract_tb(exc.__traceback__)
    ]
    return summary
