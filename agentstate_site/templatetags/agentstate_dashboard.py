"""The admin home dashboard: totals and a messages-per-day chart drawn as inline SVG (no file
from the internet, no JavaScript).

The activity figures scan the sessions, the last 30 days of messages (no index on a message's
time: the hot write path would pay for it) and the model usage (totals per tenant and user), so
they are cached for ``ACTIVITY_CACHE_SECONDS`` in the project's cache: one render per interval
pays for them, however many staff open the page.
Erasure and access request counts are cheap (indexed) and always current.
"""

from datetime import timedelta
from typing import Any, cast

from django import template
from django.conf import settings
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from agentstate.db_router.router import replica_reads
from agentstate.holds.selectors import holds_active_count
from sessions_app.selectors.dashboard import activity_summary, retention_runs_recent, run_usage_summary
from userdata_app.selectors import access_request_summary, erasure_request_summary

register = template.Library()

CHART_DAYS = 30
CHART_HEIGHT = 140
BAR_WIDTH = 18
BAR_GAP = 4
ACTIVITY_CACHE_KEY = "agentstate:admin-dashboard-activity"
ACTIVITY_CACHE_SECONDS = 300
RETENTION_RUNS = 5  # the last apply_retention runs shown (one indexed query, never cached)


@replica_reads  # figures up to 5 minutes old anyway: a replica's lag changes nothing
def _activity() -> dict:
    return {**activity_summary(days=CHART_DAYS), "usage": run_usage_summary(), "as_of": timezone.now()}


def _user_sessions_url(*, tenant_pk: int, user_id: str) -> str:
    query: dict[str, int | str] = {"tenant__id__exact": tenant_pk, "user_id": user_id}
    return reverse("admin:sessions_app_session_changelist") + "?" + urlencode(query)


@register.inclusion_tag("admin/agentstate_dashboard.html", takes_context=True)
def agentstate_dashboard(context: template.Context) -> dict[str, Any]:
    activity = cast(dict[str, Any], cache.get_or_set(ACTIVITY_CACHE_KEY, _activity, ACTIVITY_CACHE_SECONDS))
    per_day = activity["messages_per_day"]
    peak = max((n for _, n in per_day), default=0) or 1
    bars = []
    for i, (day, n) in enumerate(per_day):
        height = round(n / peak * CHART_HEIGHT)
        bars.append(
            {
                "day": day,
                "count": n,
                "x": i * (BAR_WIDTH + BAR_GAP),
                "y": CHART_HEIGHT - height,
                "height": height,
                "label": i % 5 == 0 or i == len(per_day) - 1,
                # The last label ends at its bar's right edge: drawn from its start it ran off the chart.
                "label_x": i * (BAR_WIDTH + BAR_GAP) + (BAR_WIDTH if i == len(per_day) - 1 else 0),
                "label_anchor": "end" if i == len(per_day) - 1 else "start",
            }
        )
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    return {
        "perms": context.get("perms"),  # the compliance cards are shown to those who may open them
        # The same parameters as the session list's own "Today" link of its "updated at" filter.
        "active_today_query": urlencode(
            {"ended": "no", "updated_at__gte": str(today), "updated_at__lt": str(today + timedelta(days=1))}
        ),
        "activity": activity,
        "usage": {
            "per_tenant": activity["usage"]["per_tenant"],
            "per_user": [
                {**row, "sessions_url": _user_sessions_url(tenant_pk=row["tenant_id"], user_id=row["user_id"])}
                for row in activity["usage"]["per_user"]
            ],
        },
        "erasures": erasure_request_summary(),
        "access_requests": access_request_summary(),
        "development_key": settings.ERASURE_HMAC_KEY_ID == settings.ERASURE_DEVELOPMENT_KEY_ID,
        "legal_holds": holds_active_count(),
        "bars": bars,
        "peak": peak if any(n for _, n in per_day) else 0,
        "chart_width": len(per_day) * (BAR_WIDTH + BAR_GAP),
        "chart_height": CHART_HEIGHT,
        "bar_width": BAR_WIDTH,
        "days": CHART_DAYS,
        "refresh_minutes": ACTIVITY_CACHE_SECONDS // 60,
        "retention_runs": retention_runs_recent(limit=RETENTION_RUNS),
    }
