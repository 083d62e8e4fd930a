"""User data (browse only), erasure requests (the compliance officer's workflow) and the registry
of erased subjects. Every step calls ``userdata_app.erasure``; the admin only collects input and
shows results.

A module per area, each registering its admins when imported: ``user_data``, ``erasure_requests``,
``erased_subjects``. ADK's user: state is browsed from its backend's admin (``userdata_app.adk``).
"""

from userdata_app.admin import erased_subjects, erasure_requests, user_data

__all__ = ["erased_subjects", "erasure_requests", "user_data"]
