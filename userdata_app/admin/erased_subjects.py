"""The registry of erased subjects, browsed only: keyed hashes, never a user id."""

from __future__ import annotations

from django.contrib import admin

from agentstate.admin.options import ReadOnlyAdmin
from userdata_app.models import ErasedSubject


@admin.register(ErasedSubject)
class ErasedSubjectAdmin(ReadOnlyAdmin):
    """The registry of erased subjects (keyed hashes only), read by reapply_erasures."""

    list_display = ("id", "key_id", "subject_hash", "scope", "request", "erased_at", "grace_until", "last_reapplied_at")
    list_filter = ("scope", "key_id")
    search_fields = ("subject_hash__exact",)  # served by the (subject_hash, grace_until) index
    search_help_text = "Exact subject hash (lowercase hex)."
    ordering = ("-id",)
