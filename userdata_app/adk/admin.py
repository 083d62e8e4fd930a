"""Google ADK's user: state, browsed only (user data: erased with the user's other data)."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from agentstate.admin.options import ReadOnlyAdmin
from userdata_app.models import AdkUserState


@admin.register(AdkUserState)
class AdkUserStateAdmin(ReadOnlyAdmin):
    """Google ADK's user: state, one row per tenant, user and app (user data: erased with it)."""

    list_display = ("app_name", "user_id", "tenant", "updated_at")
    list_select_related = ("tenant",)
    list_filter = ("tenant",)
    search_fields = ("user_id__exact",)
    ordering = ("-id",)
    fields = ("tenant", "app_name", "user_id", "updated_at", "state_json")
    readonly_fields = ("state_json",)

    @admin.display(description="state")
    def state_json(self, obj: AdkUserState):
        return format_html(
            '<pre class="json">{}</pre>', json.dumps(json.loads(obj.state), indent=2, ensure_ascii=False)
        )
