"""Memory items, browsed only (user data: erased with the user's other data)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.safestring import SafeString

from agentstate.admin.display import pretty_json
from agentstate.admin.filters import UserIdFilter, WordsFilter
from agentstate.admin.options import ReadOnlyAdmin
from agentstate.holds.admin import HeldPage
from agentstate.holds.selectors import holds_of
from userdata_app.memory.models import MemoryItem
from userdata_app.memory.selectors import MEMORY_INDEX


class MemoryWordsFilter(WordsFilter):
    index = MEMORY_INDEX


@admin.register(MemoryItem)
class MemoryItemAdmin(HeldPage, ReadOnlyAdmin):
    """An agent's long-term memory about a person (LangGraph's store, ADK's memory service)."""

    list_display = ("namespace", "key", "user_id", "tenant", "updated_at", "expires_at")
    list_select_related = ("tenant",)
    list_filter = (MemoryWordsFilter, "tenant", UserIdFilter)
    search_fields = ("user_id__exact",)
    ordering = ("-id",)
    fields = ("tenant", "user_id", "namespace", "key", "created_at", "updated_at", "expires_at", "value_json")
    readonly_fields = ("value_json",)

    def holds_of_object(self, obj: MemoryItem):
        return holds_of(tenant=obj.tenant, user_id=obj.user_id)

    @admin.display(description="value")
    def value_json(self, obj: MemoryItem) -> SafeString:
        return pretty_json(obj.value)
