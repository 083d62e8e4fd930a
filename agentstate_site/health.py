"""Probes. ``/livez``: the process answers (restart it when not); ``/healthz`` (also ``/readyz``):
it can serve — the database, the cache and, when it lives in Redis, the working-state store (send
it no traffic when not). Operators (agentstate.operators) also get the details: what the router
finds of each replica, how full PgBouncer's pool is. Project level: it probes what the apps use."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agentstate import pgbouncer
from agentstate.db_router.health import replica_verdicts
from agentstate.operators import is_operator
from sessions_app import working_state


@require_safe
def livez(request: HttpRequest) -> JsonResponse:
    """``/livez``: a plain Django view (no DRF negotiation, authentication or throttling) that
    touches no dependency, so a failing database never gets a healthy process restarted."""
    return JsonResponse({"status": "ok"})


def _check(probe) -> str:
    try:
        probe()
    except Exception as exc:  # any failure of a dependency is what the probe reports
        return f"error: {type(exc).__name__}"
    return "ok"


def _database() -> None:
    # Raw: no ORM form (a round trip that reads no table: /healthz's database probe)
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def synchronous_standby() -> str | None:
    """What the primary's synchronous replication has now, when it asks for any (one cheap query):
    with none connected, every commit waits for one and is answered 503 (agentstate.postgresql)
    until the HA tool stops asking. Counting standbys needs pg_read_all_stats (or pg_monitor)."""
    # Raw: no ORM form (current_setting and pg_stat_replication)
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('synchronous_standby_names'), count(*) FILTER (WHERE sync_state IN "
            "('sync', 'quorum')), count(*) FILTER (WHERE sync_state IS NULL) FROM pg_stat_replication"
        )
        names, confirming, hidden = cursor.fetchone()
    if not names:
        return None
    if confirming:
        return f"ok: {confirming} connected"
    if hidden:
        return "unknown: the database role cannot see pg_stat_replication (grant it pg_monitor)"
    return "none connected: writes answer 503 until one is back or the HA tool stops requiring one"


def _cache() -> None:
    cache.set("agentstate:healthz", "ok", 10)
    if cache.get("agentstate:healthz") != "ok":
        raise RuntimeError("cache did not return what was stored")


def _working_state() -> None:
    store = working_state.get_store()
    if not isinstance(store, working_state.RedisWorkingStateStore):
        raise RuntimeError("working state is not in Redis")
    store.ping()


def replica_details() -> dict[str, dict[str, object]] | None:
    """Each replica as the router finds it now (checked again when its last check is older than
    ``AGENTSTATE_REPLICA_CHECK_SECONDS``): ``ok``, ``skipped`` or ``lost``, why, and its lag."""
    if not settings.DATABASE_REPLICAS:
        return None
    verdicts = replica_verdicts(refresh=True)
    now = time.monotonic()
    details: dict[str, dict[str, object]] = {}
    for alias, verdict in verdicts.items():
        if verdict is None:  # the check itself failed to record (cannot happen after a refresh)
            details[alias] = {"state": "unchecked"}
            continue
        details[alias] = {
            "state": verdict.state,
            "reason": verdict.reason,
            "lag_seconds": None if verdict.lag is None or verdict.lag == float("inf") else round(verdict.lag, 3),
            "checked_seconds_ago": round(now - verdict.checked_at, 3),
        }
    return details


def pool_details() -> dict[str, object] | None:
    """PgBouncer's pools of the app's database (``AGENTSTATE_PGBOUNCER_ADMIN_URL``), or why they
    could not be read."""
    reading = pgbouncer.pool_read()
    if reading is None:
        return None
    if reading.error:
        return {"pgbouncer": f"error: {reading.error}"}
    return {"pgbouncer": "ok", "pools": [asdict(pool) for pool in reading.pools]}


# What operators see beyond the probe's answer: name -> the detail, None when it does not apply.
# Each is told, never a reason for a 503 (a skipped replica's reads go to the primary).
OPERATOR_DETAILS: dict[str, Callable[[], object | None]] = {
    "replicas": replica_details,
    "pool": pool_details,
}


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "error"])
    database = serializers.CharField()
    cache = serializers.CharField()
    working_state = serializers.CharField(required=False, help_text="Only when working state is in Redis.")
    synchronous_standby = serializers.CharField(
        required=False,
        help_text="Only on a primary that requires a synchronous standby: whether one is connected "
        "(without one, writes answer 503 and reads still work).",
    )
    replicas = serializers.DictField(
        child=serializers.DictField(),
        required=False,
        help_text="Operators only, with replicas: each replica's state (ok, skipped, lost), why, its lag in "
        "seconds and how long ago it was checked. A skipped or lost one does not make the service unready.",
    )
    pool = serializers.DictField(
        required=False,
        help_text="Operators only, with AGENTSTATE_PGBOUNCER_ADMIN_URL: PgBouncer's pools of the app's database "
        "(clients waiting, longest wait), or the error reading them.",
    )


class HealthView(APIView):
    """``/healthz`` and ``/readyz``: no authentication needed; 200 when the database, the cache and
    (when it is Redis) the working-state store answer, else 503 naming the failing part. An
    operator (a staff login, or the operator token) also gets ``OPERATOR_DETAILS``."""

    authentication_classes = [SessionAuthentication]  # only to recognise a staff login
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []

    @extend_schema(
        auth=[],
        responses={
            200: HealthSerializer,
            503: OpenApiResponse(HealthSerializer, description="A dependency failed: its entry says how."),
        },
    )
    def get(self, request: Request) -> Response:
        checks = {"database": _check(_database)}
        # Read before the cache is probed: a cache in the database waits for the standby like any write.
        standby = synchronous_standby() if checks["database"] == "ok" else None
        checks["cache"] = _check(_cache)
        if settings.WORKING_STATE_BACKEND == "redis":
            checks["working_state"] = _check(_working_state)
        healthy = all(value == "ok" for value in checks.values())
        answer: dict[str, object] = {"status": "ok" if healthy else "error", **checks}
        if standby:  # told to anyone, not a 503 by itself: reads still work, writes answer 503
            answer["synchronous_standby"] = standby
        if is_operator(request):
            for name, detail in OPERATOR_DETAILS.items():
                found = detail()
                if found is not None:
                    answer[name] = found
        return Response(answer, status=200 if healthy else 503)
