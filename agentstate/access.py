"""Where staff and compliance keys read people's data, told to whoever keeps the access log.

The platform's admin base (``agentstate.admin.options``) and API base (``agentstate.api.views``)
call these at the one place every page and every call passes; the app that keeps the log
(``userdata_app.access_log``) registers its recorder from its ``AppConfig.ready``, so the platform
imports no app. With none registered, nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from django.db.models import Model
from django.http import HttpRequest, HttpResponse


class Recorder(Protocol):
    def admin_rows_read(self, *, request: HttpRequest, model: type[Model], pks: Sequence[Any], action: str) -> None:
        """Staff saw these rows of ``model`` (a change page: ``view``; a list: ``list`` or ``search``)."""

    def admin_record_read(self, *, request: HttpRequest, obj: Model) -> HttpResponse | None:
        """Staff open ``obj``'s page: a page to show before it (the reason form; nothing recorded),
        or None once the page is recorded as a ``view``."""

    def api_call(self, *, request: Any, view: Any, response: Any) -> None:
        """An API call was answered (the recorder decides whether its key is one it logs)."""


_recorder: Recorder | None = None


def register(recorder: Recorder) -> None:
    global _recorder  # one recorder per process, set once from AppConfig.ready
    _recorder = recorder


def admin_rows_read(*, request: HttpRequest, model: type[Model], pks: Sequence[Any], action: str) -> None:
    if _recorder is not None and pks:
        _recorder.admin_rows_read(request=request, model=model, pks=pks, action=action)


def admin_record_read(*, request: HttpRequest, obj: Model) -> HttpResponse | None:
    return _recorder.admin_record_read(request=request, obj=obj) if _recorder is not None else None


def api_call(*, request: Any, view: Any, response: Any) -> None:
    if _recorder is not None:
        _recorder.api_call(request=request, view=view, response=response)
