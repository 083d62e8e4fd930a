"""Where staff and compliance keys read people's data, told to whoever keeps the access log; and
which categories of people's data a login may read the values of.

The platform's admin base (``agentstate.admin.options``) and API base (``agentstate.api.views``)
call these at the one place every page and every call passes; the app that keeps the log
registers its recorder from its ``AppConfig.ready``, so the platform imports no app. With none
registered, nothing is recorded.

What a login may read is decided here from the map of people's data (``agentstate.subject_data``):
``ViewerMiddleware`` names the login each request runs for, and whatever renders a category's
values for staff asks ``category_readable`` first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest, HttpResponse

from agentstate import subject_data
from agentstate.subjects import PROCESS_STATE


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


# --- What a login may read ----------------------------------------------------------------------

_served: ContextVar[HttpRequest | None] = ContextVar("agentstate_served_request", default=None)


@contextmanager
def serving(request: HttpRequest) -> Iterator[None]:
    """Render what follows for ``request``'s login (looked up only when a page asks)."""
    token = _served.set(request)
    try:
        yield
    finally:
        _served.reset(token)


def viewer_may_view(model: type[Model]) -> bool:
    """Whether the login being served holds ``model``'s view permission: a link to its records is
    shown only then. Outside a login (an API key, a command) there is no one to hide from."""
    request = _served.get()
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return True
    return user.has_perm(f"{model._meta.app_label}.view_{model._meta.model_name}")


def category_readable(category: str) -> bool:
    """Whether the login being served may read the values of ``category`` wherever a page shows
    them. Process state: yes, its page's own permission let the login in. User data: only with the
    view permission of the category's records in the admin (the Support group holds none), so no
    page shows a value its own records would refuse (docs/COMPLIANCE.md, "Who may do what")."""
    declarations = [d for d in subject_data.declared() if d.category == category]
    if not declarations:
        raise LookupError(f"{category!r} is no category of the map of people's data.")
    if any(d.kind == PROCESS_STATE for d in declarations):
        return True
    opened = [d.model for d in declarations if admin.site.is_registered(d.model)] or [d.model for d in declarations]
    return all(viewer_may_view(model) for model in opened)


class ViewerMiddleware:
    """Names the login each request runs for (after ``AuthenticationMiddleware``), for as long as
    its answer is rendered: Django renders a view's template response inside the middleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with serving(request):
            return self.get_response(request)
