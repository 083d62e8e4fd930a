"""Routes of ADK's artifact service, under /api/v1/adk/apps/{app_name}/users/{user_id}/artifacts/
(trailing slash optional); included by backends.adk.urls."""

from django.urls import re_path

from backends.adk.people.artifacts import views

USER = r"^apps/(?P<app_name>[^/]+)/users/(?P<user_id>[^/]+)/artifacts"  # identifiers checked by the view

urlpatterns = [
    re_path(rf"{USER}/?$", views.ArtifactListView.as_view(), name="adk-artifact-list"),
    re_path(rf"{USER}/versions/?$", views.ArtifactVersionListView.as_view(), name="adk-artifact-versions"),
    re_path(rf"{USER}/load/?$", views.ArtifactLoadView.as_view(), name="adk-artifact-load"),
    re_path(rf"{USER}/content/?$", views.ArtifactContentView.as_view(), name="adk-artifact-content"),
]
