"""What the admin dashboard and staff pages sum up over every tenant: usage, activity, retention runs."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from typing import Any

from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from sessions_app.models import (
    Message,
    RetentionRun,
    RunUsage,
    Session,
)
from sessions_app.selectors.export import USAGE_COUNTS

TOP_USERS = 10  # users the dashboard lists by tokens used


def run_usage_totals(rows: QuerySet[RunUsage]) -> dict[str, int]:
    """The sums of ``rows``' counts and how many turns they are (0 each for none)."""
    totals = rows.aggregate(turns=Count("id"), **{name: Sum(name) for name in USAGE_COUNTS})
    return {name: value or 0 for name, value in totals.items()}


def run_usage_summary(*, top_users: int = TOP_USERS) -> dict[str, Any]:
    """The dashboard's usage: totals per tenant, and the ``top_users`` users who used the most tokens
    (with their tenant). One grouped scan of the usage table each."""
    sums = {name: Sum(name) for name in USAGE_COUNTS}
    per_tenant = list(
        RunUsage.objects.order_by().values("tenant__slug").annotate(turns=Count("id"), **sums).order_by("tenant__slug")
    )
    per_user = list(
        RunUsage.objects.order_by()
        .values("tenant_id", "tenant__slug", "user_id")
        .annotate(turns=Count("id"), **sums)
        .order_by("-total_tokens", "tenant__slug", "user_id")[:top_users]
    )
    return {"per_tenant": per_tenant, "per_user": per_user}


def activity_summary(*, days: int = 30) -> dict[str, Any]:
    """Totals and messages per day over the last ``days`` days, for the admin dashboard."""
    now = timezone.now()
    today = timezone.localdate(now)
    start_day = today - timedelta(days=days - 1)
    start = timezone.make_aware(datetime.combine(start_day, time.min))
    counts = dict(
        Message.objects.filter(created_at__gte=start)
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values_list("day")
        .annotate(n=Count("id"))
    )
    today_start = timezone.make_aware(datetime.combine(today, time.min))
    return {
        "sessions": Session.objects.count(),
        "messages": Session.objects.aggregate(n=Sum("message_count"))["n"] or 0,
        "active_sessions_today": Session.objects.filter(ended_at__isnull=True, updated_at__gte=today_start).count(),
        "messages_per_day": [(day, counts.get(day, 0)) for day in (start_day + timedelta(days=i) for i in range(days))],
    }


def retention_runs_recent(*, limit: int) -> list[RetentionRun]:
    """The last runs of ``apply_retention``, newest first (the admin dashboard)."""
    return list(RetentionRun.objects.order_by("-started_at")[:limit])
