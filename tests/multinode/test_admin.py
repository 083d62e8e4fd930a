"""Staff use the admin through the proxy, over HTTPS (TLS ends at HAProxy, which says so with
X-Forwarded-Proto): a login made on one app server holds on the other (the session lives in the
database, behind PgBouncer), the production settings' CSRF check and secure cookies work, and the
dashboard and a changelist, which may read the replica, show what the primary committed."""

import uuid

import httpx
from django.contrib.auth import get_user_model

from sessions_app import services
from tests.multinode.servers import APPS, PROXY, PROXY_HTTP, needs_servers, replica_wait_replayed, tenant_new, tls

pytestmark = needs_servers


def test_staff_log_in_once_over_https_and_browse_on_both_servers():
    password = uuid.uuid4().hex
    staff = get_user_model().objects.create_superuser(f"staff-{uuid.uuid4().hex[:8]}", "staff@example.com", password)
    session_id = f"admin-{uuid.uuid4().hex[:8]}"
    services.session_create(tenant=tenant_new(), user_id="u1", session_id=session_id)
    replica_wait_replayed()
    assert PROXY.startswith("https://")
    # As a browser: it sends Origin with a form's POST, and secure cookies only over HTTPS.
    with httpx.Client(base_url=PROXY, timeout=30, verify=tls(), headers={"Origin": PROXY}) as browser:
        form = browser.get("/admin/login/")
        assert form.status_code == 200 and "Secure" in form.headers["Set-Cookie"]
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
        assert "Secure" in logged_in.headers["Set-Cookie"] and "sessionid" in browser.cookies
        servers = set()
        for _ in range(4):
            home = browser.get("/admin/")
            assert home.status_code == 200 and 'class="agentstate-dashboard"' in home.text
            changelist = browser.get("/admin/sessions_app/session/", params={"q": session_id})
            assert changelist.status_code == 200 and session_id in changelist.text
            servers |= {home.headers["X-Served-By"], changelist.headers["X-Served-By"]}
    assert servers == {"app1", "app2"}


def test_plain_http_is_sent_to_https_by_the_proxy_and_by_an_app_server_told_nothing():
    """Only X-Forwarded-Proto tells an app server the client used HTTPS: the proxy sets it, and a
    request without it is redirected (so one reaching an app server by another way never logs in)."""
    to_https = httpx.get(f"{PROXY_HTTP}/admin/login/", timeout=10)
    assert to_https.status_code == 301 and to_https.headers["Location"].startswith("https://")
    direct = httpx.get(f"{APPS[0]}/admin/login/", timeout=10)
    assert direct.status_code == 301 and direct.headers["Location"].startswith("https://")
