"""Routes of the memory store, under /api/v1/store/ (trailing slash optional)."""

from django.urls import re_path

from userdata_app.memory import api

urlpatterns = [
    re_path(r"^batch/?$", api.StoreBatchView.as_view(), name="store-batch"),
]
