"""Routes of the process-state API under /api/v1/. A trailing slash is optional: a client that
forgets it gets the endpoint, not a redirect that drops its body."""

from django.urls import re_path

from sessions_app.api import views

SEGMENT = r"[^/]+"  # identifiers are checked by the view (400 naming the field)
SESSION = rf"^users/(?P<user_id>{SEGMENT})/sessions/(?P<session_id>{SEGMENT})"

urlpatterns = [
    re_path(r"^sessions/?$", views.SessionListView.as_view(), name="session-list"),
    re_path(
        rf"^users/(?P<user_id>{SEGMENT})/messages/search/?$", views.MessageSearchView.as_view(), name="message-search"
    ),
    re_path(rf"{SESSION}/?$", views.SessionDetailView.as_view(), name="session-detail"),
    re_path(rf"{SESSION}/end/?$", views.SessionEndView.as_view(), name="session-end"),
    re_path(rf"{SESSION}/restore/?$", views.SessionRestoreView.as_view(), name="session-restore"),
    re_path(rf"{SESSION}/fork/?$", views.SessionForkView.as_view(), name="session-fork"),
    re_path(rf"{SESSION}/messages/?$", views.MessageListView.as_view(), name="message-list"),
    re_path(rf"{SESSION}/messages/pop/?$", views.MessagePopView.as_view(), name="message-pop"),
    re_path(rf"{SESSION}/messages/rewind/?$", views.MessageRewindView.as_view(), name="message-rewind"),
    re_path(rf"{SESSION}/messages/clear/?$", views.MessageClearView.as_view(), name="message-clear"),
    re_path(rf"{SESSION}/rounds/?$", views.RoundListView.as_view(), name="round-list"),
    re_path(rf"{SESSION}/rounds/latest/?$", views.RoundLatestView.as_view(), name="round-latest"),
    re_path(rf"{SESSION}/rounds/(?P<round_id>[0-9]{{1,12}})/?$", views.RoundDetailView.as_view(), name="round-detail"),
    re_path(rf"{SESSION}/checkpoints/?$", views.CheckpointListView.as_view(), name="checkpoint-list"),
    re_path(rf"{SESSION}/checkpoints/latest/?$", views.CheckpointLatestView.as_view(), name="checkpoint-latest"),
    re_path(rf"{SESSION}/working-state/?$", views.WorkingStateView.as_view(), name="working-state"),
    re_path(rf"{SESSION}/transitions/?$", views.TransitionListView.as_view(), name="transition-list"),
    re_path(rf"{SESSION}/usage/?$", views.RunUsageListView.as_view(), name="run-usage-list"),
]
