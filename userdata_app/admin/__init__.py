"""User data (browse only), erasure requests (the compliance officer's workflow), subject-access
requests and the registry of erased subjects. Every step calls ``userdata_app.erasure`` or
``userdata_app.access_requests``; the admin only collects input and shows results.

A module per area, each registering its admins when imported: ``user_data``, ``erasure_requests``,
``access_requests``, ``erased_subjects``. What the two request admins share (columns, step pages,
the tools offered, the export's permission, record and download) is ``requests.RequestAdmin``.
ADK's user: state is browsed from its backend's admin (``backends.adk.people``).
"""

from userdata_app.admin import access_requests, erased_subjects, erasure_requests, user_data

__all__ = ["access_requests", "erased_subjects", "erasure_requests", "user_data"]
