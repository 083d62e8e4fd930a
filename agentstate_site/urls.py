"""Top-level URL configuration: a home page, the admin, the REST API (v1), its schema and docs, the probes.

Errors Django answers itself (an unknown URL, a refused page, a body too big before DRF reads it, a
crash) are chosen by path (agentstate_site.errors): the API's JSON error shape under /api/, the
admin's own pages in the admin.
"""

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from agentstate.api.errors import api_not_found
from agentstate.tenancy.views import KeyView
from agentstate_site.health import HealthView, livez
from agentstate_site.home import HomeView
from agentstate_site.metrics import metrics_view
from sessions_app.backends import backends

urlpatterns = [
    path("", HomeView.as_view(), name="home"),  # where the admin's "View site" leads
    path("admin/", admin.site.urls),
    re_path(r"^livez/?$", livez, name="livez"),
    re_path(r"^healthz/?$", HealthView.as_view(), name="healthz"),
    re_path(r"^readyz/?$", HealthView.as_view(), name="readyz"),
    re_path(r"^metrics/?$", metrics_view, name="metrics"),  # operators only (agentstate.operators)
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/auth/", include("rest_framework.urls")),  # log in / out links of the browsable API (staff)
    # The routes under a prefix of their own before the core's: a request is matched against the
    # routes in order, and a framework's call went through every route of the core's before its own.
    path("api/v1/compliance/", include("sessions_app.api.compliance")),
    path("api/v1/compliance/", include("userdata_app.api.compliance")),
    # The framework backends' own endpoints, as each registered them (sessions_app.backends).
    *(path(f"api/v1/{prefix}", include(urlconf)) for backend in backends() for prefix, urlconf in backend.urls),
    path("api/v1/", include("sessions_app.api.urls")),
    path("api/v1/", include("userdata_app.api.urls")),
    path("api/v1/", include("userdata_app.memory.urls")),  # LangGraph's store (memories), their search
    re_path(r"^api/v1/key/?$", KeyView.as_view(), name="api-key"),  # the calling key: its tenant, scope, person
    re_path(r"^api/", api_not_found),  # last: JSON 404s under /api/ whatever DEBUG says
]

handler400 = "agentstate_site.errors.handler400"
handler403 = "agentstate_site.errors.handler403"
handler404 = "agentstate_site.errors.handler404"
handler500 = "agentstate_site.errors.handler500"
