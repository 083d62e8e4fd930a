"""JSON log lines that carry the current request id and never the data agents store.

``RequestLogMiddleware`` puts the request id in a context variable; ``RequestContextFilter`` copies
it onto every record logged while the request runs (Django's own ``django.request`` warnings
included), and ``JsonFormatter`` writes one JSON object per line. Exceptions are logged by type,
database error code and stack frames, never by message: database errors quote the values that
caused them, and those values are messages, state or user data.
"""
from __future__ import annotations

import json
import logging
import traceback
from contextvars import ContextVar
from datetime import datetime, timezone

request_id_var: ContextVar[str | None] = ContextVar("agentstate_request_id", default=None)

# Attributes a record may carry (from ``extra=``) that are safe to write out.
_SAFE_EXTRA = ("method", "path", "status", "duration_ms", "tenant", "status_code")


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
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        for name in _SAFE_EXTRA:
            if hasattr(record, name):
                entry[name] = getattr(record, name)
        if record.exc_info and record.exc_info[1] is not None:
            entry["exception"] = exception_summary(record.exc_info[1])
        return json.dumps(entry, default=str, ensure_ascii=False)


def exception_summary(exc: BaseException) -> dict:
    """Type, SQLSTATE/constraint of a database error, and where it was raised; no message."""
    summary: dict = {"type": f"{type(exc).__module__}.{type(exc).__qualname__}"}
    diag = getattr(exc.__cause__, "diag", None) or getattr(exc, "diag", None)
    if diag is not None:
        summary["sqlstate"] = getattr(diag, "sqlstate", None)
        summary["constraint"] = getattr(diag, "constraint_name", None)
    summary["frames"] = [
        f"{frame.filename}:{frame.lineno} in {frame.name}"
        for frame in traceback.extract_tb(exc.__traceback__)
    ]
    return summary
