"""The admin home dashboard: totals and a messages-per-day chart drawn as inline SVG (no file
from the internet, no JavaScript)."""
from django import template

from sessions_app.selectors import activity_summary
from userdata_app.selectors import erasure_request_summary

register = template.Library()

CHART_DAYS = 30
CHART_HEIGHT = 140
BAR_WIDTH = 18
BAR_GAP = 4


@register.inclusion_tag("admin/agentstate_dashboard.html")
def agentstate_dashboard():
    activity = activity_summary(days=CHART_DAYS)
    per_day = activity["messages_per_day"]
    peak = max((n for _, n in per_day), default=0) or 1
    bars = []
    for i, (day, n) in enumerate(per_day):
        height = round(n / peak * CHART_HEIGHT)
        bars.append({
            "day": day, "count": n, "x": i * (BAR_WIDTH + BAR_GAP), "y": CHART_HEIGHT - height, "height": height,
            "label": i % 5 == 0 or i == len(per_day) - 1,
        })
    return {
        "activity": activity,
        "erasures": erasure_request_summary(),
        "bars": bars,
        "peak": peak if any(n for _, n in per_day) else 0,
        "chart_width": len(per_day) * (BAR_WIDTH + BAR_GAP),
        "chart_height": CHART_HEIGHT,
        "bar_width": BAR_WIDTH,
        "days": CHART_DAYS,
    }
