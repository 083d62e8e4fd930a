"""The base of every tenant endpoint."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar, cast
from urllib.parse import unquote_to_bytes

from django.core import checks
from django.core.handlers.wsgi import get_bytes_from_wsgi
from django.db.models import QuerySet
from django.http import Http404
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework import exceptions, serializers
from rest_framework.pagination import BasePagination, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from agentstate import access, subject_data
from agentstate.api import json_rows, people
from agentstate.exceptions import InvalidInput
from agentstate.tenancy import selectors as tenancy_selectors
from agentstate.tenancy.models import APIKey, Tenant
from agentstate.validation import clean_identifier, clean_round_id

# Path segments checked (400, field named) before any query uses them.
PATH_CLEANERS: dict[str, Callable[..., str | int]] = {
    "user_id": clean_identifier,
    "session_id": clean_identifier,
    "key": clean_identifier,
    "round_id": lambda value, field: clean_round_id(int(value), field=field),  # the route allows digits only
}
STAFF_TENANT_PARAM = "tenant"
EVERY_CATEGORY = ("*",)  # a view's ``reads`` for an answer that may hold every category (a subject export)


class TenantRequest(Request):
    """For type checkers: the request a TenantAPIView's handlers see, with the tenant it acts for."""

    tenant: Tenant


class TenantAPIView(APIView):
    """Authenticates, then sets ``request.tenant``: the API key's tenant, or for a staff login the
    tenant named by ``?tenant=<slug>``. Every selector and service call is scoped by it."""

    request: TenantRequest
    pagination_class: type[BasePagination]  # set by each view that lists (see paginated)

    # The categories of the map of people's data (agentstate.subject_data) this route's answers
    # carry, () for none: a staff login's call to a route that reads any is in the access log, as
    # every compliance key's call is. Every routed view says (the system check agentstate.E003).
    reads: ClassVar[tuple[str, ...] | None] = None

    # Where this route's requests name a person (agentstate.api.people: PATH, QUERY, BODY or a path
    # into the body, NO_PERSON, TENANT_WIDE): a person key is held to its person there. Every
    # routed view says (the system check agentstate.E004); one that does not refuses person keys.
    person_named_in: ClassVar[tuple[str, ...] | None] = None

    # DRF reads an empty body as {}: a PUT of working state would wipe it, a POST would store an
    # empty message. Writes need a JSON body unless a view says it takes none.
    body_required = True

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if not _path_is_utf8(request):
            raise InvalidInput.for_field("path", "must be percent-encoded UTF-8.")
        for name, cleaner in PATH_CLEANERS.items():
            if name in self.kwargs:  # the same dict the handler is called with
                self.kwargs[name] = cleaner(self.kwargs[name], field=name)
        if self.body_required and request.method in ("POST", "PUT", "PATCH") and not _has_body(request):
            raise exceptions.ParseError("The request has no body: send a JSON document.")
        cast(TenantRequest, request).tenant = self._tenant_of(request)  # what makes it a TenantRequest
        places = people.TENANT_WIDE if self.person_named_in is None else self.person_named_in  # unsaid: refused
        people.person_check(request, self, places)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        """DRF answers a ``?format=`` that no renderer of the view has with a bare 404, as if the
        route were missing: it is bad input, a 400 naming the parameter and the formats offered."""
        try:
            return super().perform_content_negotiation(request, force)
        except Http404:
            offered = ", ".join(renderer.format for renderer in self.get_renderers())
            raise InvalidInput.for_field(api_settings.URL_FORMAT_OVERRIDE, f"must be one of: {offered}.") from None

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        access.api_call(request=request, view=self, response=response)  # compliance keys' and staff reads logged
        return response

    @staticmethod
    def _tenant_of(request: Request) -> Tenant:
        if isinstance(request.auth, APIKey):
            return request.auth.tenant
        slug = request.query_params.get(STAFF_TENANT_PARAM)
        if not slug:
            raise serializers.ValidationError(
                {STAFF_TENANT_PARAM: ["Staff pick the tenant to act as with ?tenant=<slug>."]}
            )
        return tenancy_selectors.tenant_get(slug=slug)

    def paginated(self, queryset: QuerySet[Any], *, serializer_class: type[serializers.Serializer]) -> Response:
        """One page of ``queryset`` in ``{"next", "previous", "results"}``, by the view's
        ``pagination_class`` (which also puts the envelope in the schema)."""
        paginator = self.pagination_class()
        page: list[Any] | None = paginator.paginate_queryset(queryset, self.request, view=self)
        return paginator.get_paginated_response(serializer_class(page, many=True).data)

    def paginated_rows(self, queryset: QuerySet[Any], *, serializer_class: type[serializers.Serializer]) -> Response:
        """``paginated``, each row written as JSON by the database in ``serializer_class``'s shape
        (``agentstate.api.json_rows``): for the long lists, where building every value in Python
        was most of the answer's cost."""
        paginator = cast(CursorPagination, self.pagination_class())
        ordering = [paginator.ordering] if isinstance(paginator.ordering, str) else paginator.ordering
        # The first column is the cursor's position; the rest settle ties in the page's order.
        rows = json_rows.json_rows(queryset, serializer_class, *(field.lstrip("-") for field in ordering))
        page = paginator.paginate_queryset(rows, self.request, view=self)
        return paginator.get_paginated_response(json_rows.embedded(page or ()))


def reads_declared(view_class: Any) -> tuple[str, ...] | None:
    """The categories a routed view's answers carry: every category for ``EVERY_CATEGORY``; None
    for a view of this API that says nothing (the system check refuses it)."""
    reads = getattr(view_class, "reads", None)
    return subject_data.categories() if reads == EVERY_CATEGORY else reads


def check_reads_declared(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """System check: every routed view of this API says which categories of people's data its
    answers carry (``reads``), each a category of the map, so that the access log can tell a staff
    read from any other call (docs/COMPLIANCE.md, "The access log")."""
    known = set(subject_data.categories())
    errors: list[checks.CheckMessage] = []
    for pattern in _url_patterns(get_resolver().url_patterns):
        view_class = getattr(pattern.callback, "view_class", None) or getattr(pattern.callback, "cls", None)
        if not (isinstance(view_class, type) and issubclass(view_class, TenantAPIView)):
            continue
        reads = reads_declared(view_class)
        name = f"{view_class.__module__}.{view_class.__qualname__}"
        if reads is None:
            errors.append(
                checks.Error(
                    f"{name} does not say which categories of people's data its answers carry.",
                    hint="Set its `reads` (agentstate.api.views.TenantAPIView): () for none.",
                    id="agentstate.E003",
                )
            )
        elif set(reads) - known:
            unknown = ", ".join(sorted(set(reads) - known))
            errors.append(checks.Error(f"{name} reads {unknown}: no category of the map.", id="agentstate.E003"))
    return errors


def check_person_declared(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """System check: every routed view of this API says where its requests name a person
    (``person_named_in``), so that a key scoped to one person is held to that person on every
    route, and a new route is refused to such keys until someone decides (docs/API.md)."""
    errors: list[checks.CheckMessage] = []
    for pattern in _url_patterns(get_resolver().url_patterns):
        view_class = getattr(pattern.callback, "view_class", None) or getattr(pattern.callback, "cls", None)
        if not (isinstance(view_class, type) and issubclass(view_class, TenantAPIView)):
            continue
        places = view_class.person_named_in
        if places is None or not people.valid_places(places):
            errors.append(
                checks.Error(
                    f"{view_class.__module__}.{view_class.__qualname__} does not say where its requests name a person.",
                    hint="Set its `person_named_in`: places or a sentinel of agentstate.api.people.",
                    id="agentstate.E004",
                )
            )
    return errors


def _url_patterns(patterns: list[Any]) -> Iterator[URLPattern]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _url_patterns(pattern.url_patterns)
        else:
            yield pattern


RAW_PATH_KEY = "agentstate.raw_path_info"


def raw_path_keep(sender, environ=None, **kwargs) -> None:
    """On ``request_started``: keep a WSGI request's path as the bytes sent. Django then replaces
    it, re-escaping bytes that are not UTF-8: ``%ED%A0%80`` would reach a view as the text
    ``%ED%A0%80``, the same text a client's ``%25ED%25A0%2580`` makes."""
    if environ is not None:
        environ[RAW_PATH_KEY] = get_bytes_from_wsgi(environ, "PATH_INFO", "")


def _path_is_utf8(request: Request) -> bool:
    """Whether the path's percent-decoded bytes are UTF-8."""
    path = request.META.get(RAW_PATH_KEY)  # WSGI
    if path is None:  # ASGI: the bytes as sent, still escaped
        scope = getattr(request, "scope", None) or {}
        path = unquote_to_bytes(scope.get("raw_path") or b"")
    if path.isascii():
        return True
    try:
        path.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _has_body(request: Request) -> bool:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) > 0
    except ValueError:
        return False
