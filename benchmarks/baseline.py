"""The bare baseline of the HTTP benchmark, never used by the product: a minimal Django app (no
DRF, no authentication, no middleware) that appends a message the naive way, in five round
trips: BEGIN; SELECT ... FOR UPDATE; INSERT; UPDATE; COMMIT. Its ``hello/`` answers without
touching the database: the ceiling of any Django view under the same gunicorn on the machine.

Served by gunicorn as ``benchmarks.baseline:application``; its settings are
benchmarks.baseline_settings (the service's database configuration, nothing else).
"""

import json
import os

from django.db import connection, transaction
from django.http import JsonResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.baseline_settings")


@csrf_exempt
def message_append(request, session_pk: int):
    message = json.loads(request.body)["messages"][0]
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT last_seq, tenant_id, user_id FROM sessions_app_session WHERE id = %s FOR UPDATE", [session_pk]
        )
        last_seq, tenant_id, user_id = cursor.fetchone()
        cursor.execute(
            "INSERT INTO sessions_app_message (session_id, tenant_id, user_id, seq, role, type, status, name, content,"
            " metadata, created_at) VALUES (%s, %s, %s, %s, %s, 'message', '', '', %s::jsonb, '{}', %s) RETURNING id",
            [session_pk, tenant_id, user_id, last_seq + 1, message["role"], json.dumps(message["content"]), now],
        )
        cursor.execute(
            "UPDATE sessions_app_session SET last_seq = %s, updated_at = %s WHERE id = %s",
            [last_seq + 1, now, session_pk],
        )
    return JsonResponse({"seq": last_seq + 1}, status=201)


def hello(request):
    return JsonResponse({"hello": "world"})


urlpatterns = [path("append/<int:session_pk>/", message_append), path("hello/", hello)]

from django.core.wsgi import get_wsgi_application  # noqa: E402  (after the settings module is chosen)

application = get_wsgi_application()
