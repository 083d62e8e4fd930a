"""Access, over every endpoint and method of tests/api/test_cross_tenant.py's table: revoked and
expired keys get 401 and change nothing; agent keys never reach a compliance endpoint (403); a
compliance key sees only its own tenant; staff reach the subject export through the API exactly
when the admin lets them; throttling counts per key, not per address."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import override_settings
from django.urls import URLPattern
from django.utils import timezone
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from agentstate.tenancy.services import api_key_create, api_key_revoke
from tests.api.assertions import assert_error, streamed
from tests.api.cross_tenant import CASES, snapshot
from tests.userdata_app.erasure_factories import verified_request
from userdata_app.api import compliance

pytestmark = pytest.mark.django_db


def send(client, method, path, body):
    return getattr(client, method)(path, body, format="json") if body is not None else getattr(client, method)(path)


def keyed(key: str, header: str = "HTTP_AUTHORIZATION") -> APIClient:
    client = APIClient()
    client.credentials(**{header: f"Api-Key {key}" if header == "HTTP_AUTHORIZATION" else key})
    return client


@pytest.fixture(params=["revoked", "expired"])
def dead_key(request, tenant) -> str:
    """A revoked key that worked once (so it sat in the verified-key cache), or an expired one
    (expiry reached while cached is tests/api/test_auth.py's)."""
    if request.param == "expired":
        return api_key_create(tenant=tenant, name="expired", expires_at=timezone.now() - timedelta(seconds=1))[1]
    api_key, key = api_key_create(tenant=tenant, name="revoked")
    assert keyed(key).get("/api/v1/sessions/").status_code == 200
    api_key_revoke(api_key=api_key)
    return key


def test_revoked_and_expired_keys_are_401_everywhere(victim, tenant, dead_key):
    """Every endpoint and method of the table against one victim (a refused request writes
    nothing, so the cases cannot disturb each other); a failure lists every case that was not a
    clean 401 in either header or changed our rows."""
    before = snapshot(tenant)
    wrong = []
    for name, method, path, body, _ in CASES:
        for header in ("HTTP_AUTHORIZATION", "HTTP_X_API_KEY"):
            try:
                assert_error(send(keyed(dead_key, header), method, path, body), 401, "not_authenticated")
            except AssertionError as refused_otherwise:
                wrong.append(f"{method} {name} ({header}): {refused_otherwise}")
        if snapshot(tenant) != before:
            wrong.append(f"{method} {name}: changed our rows")
    assert not wrong, wrong


COMPLIANCE_ROUTES = [
    (pattern.name, method)
    for pattern in compliance.urlpatterns
    if isinstance(pattern, URLPattern)
    for method in pattern.callback.view_class.http_method_names
    if method not in ("head", "options") and hasattr(pattern.callback.view_class, method)
]
COMPLIANCE_PATHS = {
    "compliance-subject-export": "/api/v1/compliance/users/u1/export/",
    "compliance-subject-export-portable": "/api/v1/compliance/users/u1/export/portable/",
}


def test_every_compliance_route_is_in_this_table():
    assert {name for name, _ in COMPLIANCE_ROUTES} == set(COMPLIANCE_PATHS)


@pytest.mark.parametrize("name, method", COMPLIANCE_ROUTES)
def test_agent_keys_never_reach_compliance_endpoints(victim, tenant, api, name, method):
    before = snapshot(tenant)
    assert_error(send(api, method, COMPLIANCE_PATHS[name], None), 403, "permission_denied")
    assert snapshot(tenant) == before


def test_a_compliance_key_exports_only_its_own_tenants_subject(victim, tenant, other_tenant):
    own = keyed(api_key_create(tenant=tenant, name="dpo", scope="compliance")[1]).get(
        COMPLIANCE_PATHS["compliance-subject-export"]
    )
    foreign = keyed(api_key_create(tenant=other_tenant, name="dpo", scope="compliance")[1]).get(
        COMPLIANCE_PATHS["compliance-subject-export"]
    )
    assert own.status_code == foreign.status_code == 200
    exported = streamed(own).decode()
    assert "me@example.com" in exported and "secret" in exported
    exported = streamed(foreign).decode()
    assert "me@example.com" not in exported and "secret" not in exported


@pytest.fixture
def two_per_minute(monkeypatch):
    monkeypatch.setitem(api_settings.DEFAULT_THROTTLE_RATES, "api_key", "2/minute")
    with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}):
        yield


def test_throttling_counts_per_key_whichever_header_carries_it(two_per_minute, tenant):
    first, second = (api_key_create(tenant=tenant, name=n)[1] for n in ("first", "second"))
    path = "/api/v1/sessions/"
    assert keyed(first).get(path).status_code == 200
    assert keyed(first, "HTTP_X_API_KEY").get(path).status_code == 200  # the same key, the other header
    throttled = keyed(first).get(path, REMOTE_ADDR="10.9.9.9")  # another address does not help
    assert_error(throttled, 429, "throttled")
    assert int(throttled["Retry-After"]) > 0
    assert [keyed(second).get(path).status_code for _ in range(2)] == [200, 200]  # its own budget


@pytest.mark.parametrize(
    "is_staff, codenames, allowed",
    [
        (True, ["execute_erasure"], False),  # was let through the API, never through the admin
        (True, ["use_api_as_tenant"], False),
        (True, [], False),
        (False, ["export_subject_data"], False),
        (True, ["export_subject_data"], True),
    ],
    ids=["erasure-only", "api-as-tenant-only", "none", "not-staff", "export"],
)
def test_staff_export_a_subject_through_the_api_exactly_when_the_admin_lets_them(
    victim, tenant, is_staff, codenames, allowed
):
    """One permission model: the API's subject export asks staff for the permission the admin's export asks."""
    user = User.objects.create_user("clerk", password="pw-clerk-123", is_staff=is_staff)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    request = verified_request(subjects=[(tenant, "u1")], scope="everything")
    client = APIClient()
    client.force_login(user)

    through_admin = client.get(f"/admin/userdata_app/erasurerequest/{request.pk}/export/")
    through_api = client.get(COMPLIANCE_PATHS["compliance-subject-export"], {"tenant": tenant.slug})
    if allowed:
        assert through_admin.status_code == through_api.status_code == 200
        assert all("me@example.com" in streamed(answer).decode() for answer in (through_admin, through_api))
    else:
        assert through_admin.status_code in (302, 403)  # not staff: the admin's login page
        assert_error(through_api, 403, "permission_denied")
