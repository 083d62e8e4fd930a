"""Routes of the LangGraph checkpointer, under /api/v1/langgraph/ (trailing slash optional)."""

from django.urls import re_path

from backends.langgraph import views

urlpatterns = [
    re_path(r"^checkpoints/?$", views.CheckpointListView.as_view(), name="langgraph-checkpoint-list"),
    re_path(r"^checkpoint/?$", views.CheckpointDetailView.as_view(), name="langgraph-checkpoint"),
    re_path(r"^writes/?$", views.WritesView.as_view(), name="langgraph-writes"),
    re_path(r"^batch/?$", views.BatchView.as_view(), name="langgraph-batch"),
    re_path(r"^threads/delete/?$", views.ThreadDeleteView.as_view(), name="langgraph-thread-delete"),
    re_path(r"^threads/copy/?$", views.ThreadCopyView.as_view(), name="langgraph-thread-copy"),
    re_path(r"^threads/prune/?$", views.PruneView.as_view(), name="langgraph-prune"),
    re_path(r"^runs/delete/?$", views.RunsDeleteView.as_view(), name="langgraph-runs-delete"),
]
