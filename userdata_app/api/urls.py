"""Routes of the user-data API under /api/v1/ (trailing slash optional)."""

from django.urls import re_path

from userdata_app.api import views

USER = r"^users/(?P<user_id>[^/]+)"

urlpatterns = [
    re_path(rf"{USER}/data/?$", views.UserDataListView.as_view(), name="user-data-list"),
    re_path(rf"{USER}/data/(?P<key>[^/]+)/?$", views.UserDatumView.as_view(), name="user-datum"),
]
