"""The admin home dashboard: totals and a messages-per-day chart drawn as inline SVG (no file
from the internet, no JavaScript).

The activity figures scan the sessions and the last 30 days of messages (no index on a message's
time: the hot write path would pay for it), so they are cached for ``ACTIVITY_CACHE_SECONDS`` in
the project's cache: one render per interval pays for them, however many staff open the page.
Erasure request counts are cheap (indexed) and always current.
"""

from datetime import timedelta
from typing import Any, cast

from django import template
from django.core.cache import cache
from django.utils import timezone
from django.utils.http import urlencode

from agentstate.db_router import replica_reads
from agentstate.holds.selectors import holds_active_count
from sessions_app.selectors import activity_summary, retention_runs_recent
from userdata_app.selectors import erasure_request_summary

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
    return {**activity_summary(days=CHART_DAYS), "as_of": timezone.now()}


@register.inclusion_tag("admin/agentstate_dashboard.html")
def agentstate_dashboard() -> dict[str, Any]:
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
        # The same parameters as the session list's own "Today" link of its "updated at" filter.
        "active_today_query": urlencode(
            {"ended": "no", "updated_at__gte": str(today), "updated_at__lt": str(today + timedelta(days=1))}
        ),
        "activity": activity,
        "erasures": erasure_request_summary(),
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
