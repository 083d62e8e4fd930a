"""Error pages chosen by where the request went: the API's JSON error shape under /api/ (a client
parses it), the admin's own pages under the admin (staff keep the header, the breadcrumbs and the
way back), Django's plain pages elsewhere."""

import sys

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views import csrf, defaults

from agentstate.api import errors as api_errors
from agentstate.middleware import unavailable_response


def _under(request: HttpRequest, prefix: str) -> bool:
    return request.path_info.startswith(prefix)


def _is_api(request: HttpRequest) -> bool:
    return _under(request, "/api/")


def _is_admin(request: HttpRequest) -> bool:
    return _under(request, reverse("admin:index"))


def _staff(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    return user is not None and user.is_active and user.is_staff


def _admin_page(
    request: HttpRequest, template: str, *, title: str, status: int, exception: Exception | None = None
) -> HttpResponse:
    context = {**admin.site.each_context(request), "title": title, "exception": str(exception or "")}
    return render(request, template, context, status=status)


def handler400(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return api_errors.handler400(request, exception)
    return defaults.bad_request(request, exception)


def handler403(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return api_errors.handler403(request, exception)
    if _is_admin(request) and _staff(request):
        return _admin_page(request, "admin/403.html", title="Permission denied", status=403, exception=exception)
    return defaults.permission_denied(request, exception)


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return api_errors.handler404(request, exception)
    if _is_admin(request) and _staff(request):
        return _admin_page(request, "admin/404.html", title="Page not found", status=404)
    return defaults.page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    """No admin chrome here: building it queries the database, which may be what failed. A
    failure outside any view (a middleware's query) that means "retry shortly" answers 503 all
    the same (``UnavailableMiddleware`` answers those of the views)."""
    unavailable = unavailable_response(request, sys.exc_info()[1])
    if unavailable is not None:
        return unavailable
    if _is_api(request):
        return api_errors.handler500(request)
    return defaults.server_error(request)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """settings.CSRF_FAILURE_VIEW: a write with a session cookie but no CSRF token (a URL under
    /api/ that no API view serves) answers in the API's shape, not Django's HTML page."""
    if _is_api(request):
        return api_errors.handler403(request)
    return csrf.csrf_failure(request, reason)
