"""Routes of the LangGraph checkpointer, under /api/v1/langgraph/ (trailing slash optional)."""

from django.urls import re_path

from backends.langgraph import api

urlpatterns = [
    re_path(r"^checkpoints/?$", api.CheckpointListView.as_view(), name="langgraph-checkpoint-list"),
    re_path(r"^checkpoint/?$", api.CheckpointDetailView.as_view(), name="langgraph-checkpoint"),
    re_path(r"^writes/?$", api.WritesView.as_view(), name="langgraph-writes"),
    re_path(r"^batch/?$", api.BatchView.as_view(), name="langgraph-batch"),
    re_path(r"^threads/delete/?$", api.ThreadDeleteView.as_view(), name="langgraph-thread-delete"),
    re_path(r"^threads/copy/?$", api.ThreadCopyView.as_view(), name="langgraph-thread-copy"),
    re_path(r"^threads/prune/?$", api.PruneView.as_view(), name="langgraph-prune"),
    re_path(r"^runs/delete/?$", api.RunsDeleteView.as_view(), name="langgraph-runs-delete"),
]
