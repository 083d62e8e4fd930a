"""Google ADK's user: state, browsed only (user data: erased with the user's other data)."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.safestring import SafeString

from agentstate.admin.display import pretty_json
from agentstate.admin.filters import UserIdFilter
from agentstate.admin.options import ReadOnlyAdmin
from agentstate.holds.admin import HeldPage
from agentstate.holds.selectors import holds_of
from backends.adk.people.models import AdkUserState


@admin.register(AdkUserState)
class AdkUserStateAdmin(HeldPage, ReadOnlyAdmin):
    """Google ADK's user: state, one row per tenant, user and app (user data: erased with it)."""

    list_display = ("app_name", "user_id", "tenant", "updated_at")
    list_select_related = ("tenant",)
    list_filter = ("tenant", UserIdFilter)
    search_fields = ("user_id__exact",)
    ordering = ("-id",)
    fields = ("tenant", "app_name", "user_id", "updated_at", "state_json")
    readonly_fields = ("state_json",)

    def holds_of_object(self, obj: AdkUserState):
        return holds_of(tenant=obj.tenant, user_id=obj.user_id)

    @admin.display(description="state")
    def state_json(self, obj: AdkUserState) -> SafeString:
        return pretty_json(json.loads(obj.state))  # as every JSON staff read: a stored lone surrogate as its escape
