"""Run as ``python -m tests.failover.unconfirmed_erasure`` with DATABASE_URL naming an empty database
of a throwaway cluster (tests/test_synchronous_replication.py), a short
AGENTSTATE_COMMIT_TIMEOUT_SECONDS and a receipt key: erasures whose commit no synchronous standby
confirms, or whose connection is cut while its commit waits (as a primary killed mid-commit), and
what the operator is told, and an admin page's write no standby confirms; prints each outcome and
the request's status afterwards as one JSON object."""

import json
import os
import threading
import time

import django

os.environ["DJANGO_SETTINGS_MODULE"] = "agentstate_site.settings"
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402 (after django.setup)
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from agentstate.tenancy.services import tenant_get_or_create  # noqa: E402
from tests.failover.unconfirmed_write import admin_connection, standby_required  # noqa: E402
from tests.userdata_app.erasure_factories import verified_request  # noqa: E402
from userdata_app import erasure  # noqa: E402
from userdata_app.models import ErasureRequest, UserDatum  # noqa: E402
from userdata_app.services import user_datum_set  # noqa: E402


def outcome(call) -> str:
    """What the operator would be told: the error's type and message, or "ok"."""
    try:
        call()
    except Exception as exc:  # every error is the result here, the uncaught kinds above all
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def cut_the_commit_waiting_for_a_standby() -> threading.Thread:
    """Terminate the first backend seen waiting for a standby to confirm its commit: the client loses
    its connection mid-commit while the commit stays on the primary, as when the primary is killed."""

    def cut() -> None:
        with admin_connection() as admin:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                row = admin.execute("SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'").fetchone()
                if row:
                    admin.execute("SELECT pg_terminate_backend(%s)", [row[0]])
                    return
                time.sleep(0.01)

    thread = threading.Thread(target=cut)
    thread.start()
    return thread


def state(user_id: str, request_pk: int | None) -> dict[str, object]:
    """After the standby requirement is lifted, on a fresh connection: what the database holds."""
    connection.close()
    request = ErasureRequest.objects.filter(pk=request_pk).first() if request_pk else None
    return {
        "status": request.status if request else None,
        "receipt": bool(request and hasattr(request, "receipt")),
        "events": list(request.events.values_list("to_status", flat=True).order_by("id")) if request else [],
        "data_left": UserDatum.objects.filter(user_id=user_id).count(),
        "requests": ErasureRequest.objects.filter(subjects__tenant__slug="t1").count(),
    }


def main() -> None:
    call_command("migrate", verbosity=0)
    tenant = tenant_get_or_create(slug="t1")
    for user_id in ("u1", "u2", "u3"):
        user_datum_set(tenant=tenant, user_id=user_id, key="email", value=f"{user_id}@example.com")
    result: dict[str, object] = {}

    # (c) erase_user: the request's own create is not confirmed.
    standby_required("absent_standby")
    result["create"] = outcome(lambda: call_command("erase_user", "--subject", "t1:u1", "--yes", verbosity=0))
    standby_required("")
    result["create_after"] = state("u1", ErasureRequest.objects.order_by("-pk").values_list("pk", flat=True).first())

    # (a) the erasure's commit is not confirmed (the standby lost).
    request = verified_request(subjects=[(tenant, "u2")], scope="user_data")
    standby_required("absent_standby")
    result["execute"] = outcome(lambda: erasure.erasure_execute(request=request))
    standby_required("")
    result["execute_after"] = state("u2", request.pk)

    # (b) the connection is cut while the erasure's commit waits (the primary killed mid-commit).
    request = verified_request(subjects=[(tenant, "u3")], scope="user_data")
    standby_required("absent_standby")
    cutter = cut_the_commit_waiting_for_a_standby()
    result["cut"] = outcome(lambda: erasure.erasure_execute(request=request))
    cutter.join()
    connection.close()
    standby_required("")
    result["cut_after"] = state("u3", request.pk)

    # (d) an admin page whose write is not confirmed: 503 with Retry-After, as the API.
    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("officer", password="pw-officer-123"))
    standby_required("absent_standby")
    answer = staff.post(f"/admin/tenancy/tenant/{tenant.pk}/change/", {"slug": "t1", "name": "T One"})
    standby_required("")
    result["admin"] = {"status": answer.status_code, "retry_after": answer.get("Retry-After"), "page": answer.text}
    print(json.dumps(result))  # noqa: T201 (the test reads it)


if __name__ == "__main__":
    main()
