"""The base of every tenant endpoint, and the health check."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from agentstate.tenancy import selectors as tenancy_selectors
from agentstate.tenancy.models import APIKey, Tenant
from agentstate.validation import clean_identifier, clean_round_id

# Path segments checked (400, field named) before any query uses them.
PATH_CLEANERS = {
    "user_id": clean_identifier,
    "session_id": clean_identifier,
    "key": clean_identifier,
    "round_id": lambda value, field: clean_round_id(int(value), field=field),  # the route allows digits only
}
STAFF_TENANT_PARAM = "tenant"


class TenantAPIView(APIView):
    """Authenticates, then sets ``request.tenant``: the API key's tenant, or for a staff login the
    tenant named by ``?tenant=<slug>``. Every selector and service call is scoped by it."""

    # DRF reads an empty body as {}: a PUT of working state would wipe it, a POST would store an
    # empty message. Writes need a JSON body unless a view says it takes none.
    body_required = True

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        for name, cleaner in PATH_CLEANERS.items():
            if name in self.kwargs:  # the same dict the handler is called with
                self.kwargs[name] = cleaner(self.kwargs[name], field=name)
        if self.body_required and request.method in ("POST", "PUT", "PATCH") and not _has_body(request):
            raise exceptions.ParseError("The request has no body: send a JSON document.")
        request.tenant = self._tenant_of(request)

    @staticmethod
    def _tenant_of(request) -> Tenant:
        if isinstance(request.auth, APIKey):
            return request.auth.tenant
        slug = request.query_params.get(STAFF_TENANT_PARAM)
        if not slug:
            raise serializers.ValidationError(
                {STAFF_TENANT_PARAM: ["Staff pick the tenant to act as with ?tenant=<slug>."]}
            )
        return tenancy_selectors.tenant_get(slug=slug)

    def paginated(self, queryset, *, serializer_class: type[serializers.Serializer]) -> Response:
        """One page of ``queryset`` in ``{"next", "previous", "results"}``, by the view's
        ``pagination_class`` (which also puts the envelope in the schema)."""
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(queryset, self.request, view=self)
        return paginator.get_paginated_response(serializer_class(page, many=True).data)


def _has_body(request) -> bool:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) > 0
    except ValueError:
        return False


def _check(probe) -> str:
    try:
        probe()
    except Exception as exc:  # any failure of a dependency is what the probe reports
        return f"error: {type(exc).__name__}"
    return "ok"


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _cache() -> None:
    cache.set("agentstate:healthz", "ok", 10)
    if cache.get("agentstate:healthz") != "ok":
        raise RuntimeError("cache did not return what was stored")


def _working_state() -> None:
    from sessions_app import working_state

    working_state.get_store().ping()


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "error"])
    database = serializers.CharField()
    cache = serializers.CharField()
    working_state = serializers.CharField(required=False, help_text="Only when working state is in Redis.")


class HealthView(APIView):
    """``/healthz``: no authentication; 200 when the database, the cache and (when it is Redis)
    the working-state store answer, else 503 naming the failing part."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []

    @extend_schema(
        auth=[],
        responses={
            200: HealthSerializer,
            503: OpenApiResponse(HealthSerializer, description="A dependency failed: its entry says how."),
        },
    )
    def get(self, request):
        checks = {"database": _check(_database), "cache": _check(_cache)}
        if settings.WORKING_STATE_BACKEND == "redis":
            checks["working_state"] = _check(_working_state)
        healthy = all(value == "ok" for value in checks.values())
        return Response({"status": "ok" if healthy else "error", **checks}, status=200 if healthy else 503)
