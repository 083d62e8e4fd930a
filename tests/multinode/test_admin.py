"""Staff use the admin through the proxy: a login made on one app server holds on the other (the
session lives in the database, behind PgBouncer), and the dashboard and a changelist, which may
read the replica, show what the primary committed."""

import uuid

import httpx
from django.contrib.auth import get_user_model

from sessions_app import services
from tests.multinode.servers import PROXY, needs_servers, replica_wait_replayed, tenant_new

pytestmark = needs_servers


def test_staff_log_in_once_and_browse_on_both_servers():
    password = uuid.uuid4().hex
    staff = get_user_model().objects.create_superuser(f"staff-{uuid.uuid4().hex[:8]}", "staff@example.com", password)
    session_id = f"admin-{uuid.uuid4().hex[:8]}"
    services.session_create(tenant=tenant_new(), user_id="u1", session_id=session_id)
    replica_wait_replayed()
    with httpx.Client(base_url=PROXY, timeout=30) as browser:
        browser.get("/admin/login/")
        logged_in = browser.post(
            "/admin/login/?next=/admin/",
            data={
                "username": staff.username,
                "password": password,
                "csrfmiddlewaretoken": browser.cookies["csrftoken"],
                "next": "/admin/",
            },
        )
        assert logged_in.status_code == 302 and logged_in.headers["Location"] == "/admin/", logged_in.text[:500]
        servers = set()
        for _ in range(4):
            home = browser.get("/admin/")
            assert home.status_code == 200 and 'class="agentstate-dashboard"' in home.text
            changelist = browser.get("/admin/sessions_app/session/", params={"q": session_id})
            assert changelist.status_code == 200 and session_id in changelist.text
            servers |= {home.headers["X-Served-By"], changelist.headers["X-Served-By"]}
    assert servers == {"app1", "app2"}
