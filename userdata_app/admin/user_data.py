"""The user data the API keeps per tenant and user, browsed only (written and erased through the
API and erasure requests).

A user id is matched exactly as typed (never stripped) and shown with its invisible characters
spelled out: "alice" and "alice\u00a0" are two people.
"""

from __future__ import annotations

from django.contrib import admin

from agentstate.admin.display import identifier_display, json_display
from agentstate.admin.filters import UserIdFilter
from agentstate.admin.options import ReadOnlyAdmin
from agentstate.holds.admin import HeldPage
from agentstate.holds.selectors import holds_of
from userdata_app.models import UserDatum


@admin.register(UserDatum)
class UserDatumAdmin(HeldPage, ReadOnlyAdmin):
    list_display = ("key", "user_id_shown", "tenant", "updated_at")
    list_select_related = ("tenant",)
    list_filter = ("tenant", UserIdFilter)
    search_fields = ("user_id__exact", "key__exact")  # exact, case-sensitive: served by their indexes
    search_help_text = (
        "Exact user id or key: case, spaces and invisible characters count. "
        "To find one user's key, search the key and filter by user id."
    )
    ordering = ("-id",)
    fields = ("tenant", "user_id_shown", "key", "value_json", "created_at", "updated_at")
    readonly_fields = ("user_id_shown", "value_json")

    user_id_shown = identifier_display("user_id", description="user id")

    def holds_of_object(self, obj: UserDatum):
        return holds_of(tenant=obj.tenant, user_id=obj.user_id)

    value_json = json_display("value")
