"""The bare view of the HTTP and latency benchmarks, never used by the product: a minimal Django
app (no DRF, no authentication, no middleware) whose ``hello/`` answers without touching the
database: the ceiling of any Django view under the same gunicorn on the machine.

Served by gunicorn as ``benchmarks.baseline:application``; its settings are
benchmarks.baseline_settings (the service's database configuration, nothing else).
"""

import os

from django.http import JsonResponse
from django.urls import path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.baseline_settings")


def hello(request):
    return JsonResponse({"hello": "world"})


urlpatterns = [path("hello/", hello)]

from django.core.wsgi import get_wsgi_application  # noqa: E402  (after the settings module is chosen)

application = get_wsgi_application()
