"""Inside the admin a refused or missing page is the admin's own page (header, a way back), never
the API's JSON; under /api/ every error stays JSON (issue 15, item 3)."""

import pytest
from django.urls import reverse

from tests.admin.test_admin import login, staff
from tests.userdata_app.erasure_factories import verified_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(db):
    """Staff who may browse sessions and erasure requests, nothing more."""
    return staff("viewer", perms=["sessions_app.view_session", "userdata_app.view_erasurerequest"])


def assert_admin_page(response, status: int, text: str):
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert '<div id="site-name">' in page and text in page  # the admin's header, not JSON
    assert '"error"' not in page


def test_staff_without_the_permission_get_the_admins_403_on_the_execute_page(client, viewer, tenant):
    login(client, viewer)
    request = verified_request(subjects=[(tenant, "alice")], scope="everything")
    response = client.get(reverse("admin:userdata_app_erasurerequest_execute", args=[request.pk]))
    assert_admin_page(response, 403, "Permission denied")


def test_a_tenant_link_without_the_tenant_permission_is_the_admins_403(client, viewer, tenant):
    login(client, viewer)
    assert_admin_page(client.get(reverse("admin:tenancy_tenant_change", args=[tenant.pk])), 403, "Permission denied")


def test_a_missing_admin_page_is_the_admins_404(client, viewer, admin_client):
    login(client, viewer)
    assert_admin_page(client.get("/admin/no/such/page/"), 404, "Page not found")
    assert_admin_page(
        admin_client.get(reverse("admin:userdata_app_erasurerequest_execute", args=["abc"])), 404, "Page not found"
    )


def test_api_errors_stay_json(client, viewer):
    login(client, viewer)  # a staff session does not change the API's answers
    response = client.get("/api/v1/sessions/")
    assert response.status_code in (401, 403) and response.json()["error"]["code"] in (
        "not_authenticated",
        "permission_denied",
    )
    assert client.get("/api/v1/nothing/").json()["error"]["code"] == "not_found"


def test_a_write_without_csrf_token_under_the_api_is_json(admin_user):
    """A write with a session cookie and no CSRF token to a URL under /api/ that no API view
    serves (found by the schema fuzzer): JSON, like every answer there (the catch-all 404 takes no
    CSRF check; CSRF_FAILURE_VIEW answers JSON for any other non-DRF view there); the admin keeps
    Django's page."""
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.put("/api/v1/users/0/sessions/0/rounds/null,null/", "{}", content_type="application/json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    page = client.post(reverse("admin:userdata_app_erasurerequest_add"), {})
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html")
