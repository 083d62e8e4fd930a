"""Routes of the memory store under /api/v1/ (trailing slash optional)."""

from django.urls import re_path

from userdata_app.memory import views

urlpatterns = [
    re_path(r"^store/batch/?$", views.StoreBatchView.as_view(), name="store-batch"),
    re_path(r"^users/(?P<user_id>[^/]+)/memories/search/?$", views.MemorySearchView.as_view(), name="memory-search"),
]
