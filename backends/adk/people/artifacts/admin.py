"""Artifacts, browsed only: what is held (name, version, type, size), never the bytes."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet

from agentstate.admin.filters import UserIdFilter
from agentstate.admin.options import ReadOnlyAdmin
from agentstate.holds.admin import HeldPage
from agentstate.holds.models import LegalHold
from agentstate.holds.selectors import holds_of
from backends.adk.people.artifacts.models import Artifact


@admin.register(Artifact)
class ArtifactAdmin(HeldPage, ReadOnlyAdmin):
    """A file an agent saved for a person (Google ADK's artifacts); erased with the user's data."""

    list_display = (
        "filename",
        "version",
        "mime_type",
        "size",
        "user_id",
        "app_name",
        "session_id",
        "tenant",
        "created_at",
    )
    list_select_related = ("tenant",)
    list_filter = ("tenant", UserIdFilter)
    search_fields = ("user_id__exact",)
    ordering = ("-id",)
    fields = (
        "tenant",
        "user_id",
        "app_name",
        "session_id",
        "filename",
        "version",
        "kind",
        "mime_type",
        "size",
        "file_uri",
        "custom_metadata",
        "created_at",
    )

    def holds_of_object(self, obj: Artifact) -> QuerySet[LegalHold]:
        return holds_of(tenant=obj.tenant, user_id=obj.user_id, session_pk=obj.adk_session_id)
