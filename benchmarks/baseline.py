"""The bare view of the HTTP and latency benchmarks, never used by the product: a minimal Django
app (no DRF, no authentication, no middleware) whose ``hello/`` answers without touching the
database: the ceiling of any Django view under the same gunicorn on the machine.

Served as the service is (``gunicorn -c gunicorn.conf.py``, agentstate_site.wsgi) with
``DJANGO_SETTINGS_MODULE=benchmarks.baseline_settings`` (the service's database configuration,
nothing else), whose URLs are these.
"""

from django.http import JsonResponse
from django.urls import path


def hello(request):
    return JsonResponse({"hello": "world"})


urlpatterns = [path("hello/", hello)]
