"""Routes of the ADK session service under /api/v1/adk/ (trailing slash optional)."""

from django.urls import include, re_path

from backends.adk import views

SEGMENT = r"[^/]+"  # identifiers are checked by the view (400 naming the field)
APP = rf"^apps/(?P<app_name>{SEGMENT})"
USER = rf"{APP}/users/(?P<user_id>{SEGMENT})"
SESSION = rf"{USER}/sessions/(?P<session_id>{SEGMENT})"

urlpatterns = [
    re_path(rf"{APP}/sessions/?$", views.SessionListView.as_view(), name="adk-session-list"),
    re_path(rf"{APP}/state/?$", views.AppStateView.as_view(), name="adk-app-state"),
    re_path(rf"{USER}/sessions/?$", views.SessionCreateView.as_view(), name="adk-session-create"),
    re_path(rf"{USER}/state/?$", views.UserStateView.as_view(), name="adk-user-state"),
    re_path(rf"{SESSION}/?$", views.SessionDetailView.as_view(), name="adk-session-detail"),
    re_path(rf"{SESSION}/events/?$", views.EventListView.as_view(), name="adk-event-list"),
    re_path("", include("backends.adk.people.artifacts.urls")),  # ADK's artifact service
]
