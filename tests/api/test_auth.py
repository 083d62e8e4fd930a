"""API keys: both headers, 401 for missing/bad/revoked/expired keys, the per-process key cache and
its revocation delay, staff logins, scopes, the create_api_key command and the keys admin."""

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.views import APIView

from agentstate.api.permissions import HasComplianceScope
from agentstate.tenancy import selectors as tenancy_selectors
from agentstate.tenancy import services as tenancy_services
from agentstate.tenancy.models import APIKey, Tenant
from agentstate.tenancy.services import api_key_create, api_key_revoke
from sessions_app.models import Session
from tests.api.assertions import assert_error
from userdata_app.models import UserDatum

pytestmark = pytest.mark.django_db
URL = "/api/v1/users/u1/data/"


def key_client(key: str, header: str = "authorization") -> APIClient:
    client = APIClient()
    if header == "authorization":
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    else:
        client.credentials(HTTP_X_API_KEY=key)
    return client


@pytest.mark.parametrize("header", ["authorization", "x-api-key"])
def test_either_header_authenticates(tenant, header):
    _, key = api_key_create(tenant=tenant, name="k")
    assert key_client(key, header).get(URL).status_code == 200


def test_no_key_is_401_with_www_authenticate(anon):
    response = anon.get(URL)
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Api-Key"


@pytest.mark.parametrize(
    "credentials",
    [
        {"HTTP_AUTHORIZATION": "Api-Key abcdefgh.0123456789abcdef0123456789abcdef"},  # well-formed, unknown
        {"HTTP_AUTHORIZATION": "Api-Key not-a-key"},
        {"HTTP_X_API_KEY": "x" * 5000},
        {"HTTP_X_API_KEY": "abc\x00def.ghi"},
        {"HTTP_AUTHORIZATION": "Api-Key "},
    ],
)
def test_bad_key_is_401(credentials):
    client = APIClient()
    client.credentials(**credentials)
    response = client.get(URL)
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Api-Key"


def test_two_different_keys_are_refused(tenant, other_tenant):
    _, mine = api_key_create(tenant=tenant, name="a")
    _, theirs = api_key_create(tenant=other_tenant, name="b")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {mine}", HTTP_X_API_KEY=theirs)
    assert_error(client.get(URL), 401, "not_authenticated")


def test_expired_key_is_401_even_while_cached(tenant):
    api_key, key = api_key_create(tenant=tenant, name="k", expires_at=timezone.now() + timedelta(hours=1))
    client = key_client(key)
    assert client.get(URL).status_code == 200  # now cached
    APIKey.objects.filter(pk=api_key.pk).update(expiry_date=timezone.now() - timedelta(seconds=1))
    tenancy_selectors.api_key_cache_clear()
    assert_error(client.get(URL), 401, "not_authenticated")


def test_revoking_stops_the_key_at_once_in_this_process(tenant):
    api_key, key = api_key_create(tenant=tenant, name="k")
    client = key_client(key)
    assert client.get(URL).status_code == 200
    api_key_revoke(api_key=api_key)
    assert_error(client.get(URL), 401, "not_authenticated")


def test_revocation_elsewhere_takes_effect_when_the_cache_entry_expires(tenant):
    """Another process revoked the key (a plain UPDATE here): this process keeps trusting its
    cached verification until it expires (API_KEY_CACHE_SECONDS), then refuses the key."""
    api_key, key = api_key_create(tenant=tenant, name="k")
    client = key_client(key)
    assert client.get(URL).status_code == 200
    APIKey.objects.filter(pk=api_key.pk).update(revoked=True)
    assert client.get(URL).status_code == 200  # the documented revocation delay
    tenancy_selectors.api_key_cache_clear()  # what the TTL does
    assert_error(client.get(URL), 401, "not_authenticated")


@override_settings(API_KEY_CACHE_SECONDS=0)
def test_without_cache_revocation_is_immediate(tenant):
    api_key, key = api_key_create(tenant=tenant, name="k")
    client = key_client(key)
    assert client.get(URL).status_code == 200
    APIKey.objects.filter(pk=api_key.pk).update(revoked=True)
    assert_error(client.get(URL), 401, "not_authenticated")


def test_a_cached_key_costs_no_query(tenant, django_assert_num_queries):
    _, key = api_key_create(tenant=tenant, name="k")
    client = key_client(key)
    client.get(URL)
    with django_assert_num_queries(1):  # the user-data page only
        assert client.get(URL).status_code == 200


# --- staff logins ---------------------------------------------------------------------------


@pytest.fixture
def staff(db):
    return User.objects.create_user("staff", password="pw-staff-123", is_staff=True)


def test_staff_with_permission_picks_a_tenant(staff, tenant):
    staff.user_permissions.add(Permission.objects.get(codename="use_api_as_tenant"))
    client = APIClient()
    client.force_login(staff)
    assert client.put("/api/v1/users/u1/data/k/?tenant=acme", {"value": 1}, format="json").status_code == 200
    assert client.get(f"{URL}?tenant=acme").json()["results"][0]["key"] == "k"
    assert_error(client.get(URL), 400, "invalid", field="tenant")
    assert_error(client.get(f"{URL}?tenant=nope"), 400, "invalid", field="tenant")


def test_staff_without_permission_is_refused(staff, tenant):
    client = APIClient()
    client.force_login(staff)
    assert_error(client.get(f"{URL}?tenant=acme"), 403, "permission_denied")


def test_staff_log_in_from_the_browsable_api(staff, client):
    assert client.get("/api/auth/login/").status_code == 200
    response = client.post(
        "/api/auth/login/", {"username": "staff", "password": "pw-staff-123", "next": "/api/v1/sessions/"}
    )
    assert response.status_code == 302 and client.session.get("_auth_user_id") == str(staff.pk)


def test_a_request_naming_a_key_is_answered_by_the_key_alone_beside_a_login(staff, tenant, other_tenant):
    """An API request naming a key skips the login's middleware (agentstate.middleware): a login
    beside the key changes nothing, a bad key is refused whatever the login, and outside the API
    the same headers leave the login's pages working."""
    staff.user_permissions.add(Permission.objects.get(codename="use_api_as_tenant"))
    client = APIClient()
    client.force_login(staff)
    _, key = api_key_create(tenant=tenant, name="k")
    client.credentials(HTTP_X_API_KEY=key)
    assert (
        client.put(f"/api/v1/users/u1/data/k/?tenant={other_tenant.slug}", {"value": 1}, format="json").status_code
        == 200
    )
    assert UserDatum.objects.get(user_id="u1").tenant == tenant  # the key's tenant, not the one staff named
    client.credentials(HTTP_AUTHORIZATION="Api-Key nope")
    assert_error(client.get(f"{URL}?tenant=acme"), 401, "not_authenticated")
    client.credentials(HTTP_X_API_KEY=key)
    assert client.get("/admin/").status_code == 200 and client.get("/api/auth/login/").status_code == 200


def test_browsable_api_renders_for_a_superuser(tenant):
    admin = User.objects.create_superuser("root", password="pw-root-123")
    client = APIClient()
    client.force_login(admin)
    response = client.get("/api/v1/sessions/?tenant=acme", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert b"<html" in response.content


# --- scopes ---------------------------------------------------------------------------------


class ComplianceOnly(APIView):
    permission_classes = [HasComplianceScope]

    def get(self, request):
        return Response({"ok": True})


def _compliance_status(**credentials) -> int:
    request = APIRequestFactory().get("/x", **credentials)
    return ComplianceOnly.as_view()(request).status_code


def test_compliance_scope_needs_a_compliance_key(tenant):
    _, agent = api_key_create(tenant=tenant, name="agent")
    _, compliance = api_key_create(tenant=tenant, name="dpo", scope="compliance")
    assert _compliance_status(HTTP_X_API_KEY=compliance) == 200
    assert _compliance_status(HTTP_X_API_KEY=agent) == 403
    assert _compliance_status() == 401


# --- create_api_key command -------------------------------------------------------------------


def test_create_api_key_prints_a_working_key_once_and_creates_the_tenant(db):
    out, err = StringIO(), StringIO()
    call_command(
        "create_api_key", "--tenant", "newco", "--name", "worker", "--expires-days", "7", stdout=out, stderr=err
    )
    key = out.getvalue().strip()
    assert Tenant.objects.filter(slug="newco").exists()
    api_key = APIKey.objects.get(tenant__slug="newco")
    assert api_key.scope == "agent" and api_key.expiry_date is not None
    assert key not in api_key.hashed_key and key not in err.getvalue()
    assert key_client(key).get(URL).status_code == 200


def test_create_api_key_compliance_scope(tenant):
    out = StringIO()
    call_command(
        "create_api_key", "--tenant", "acme", "--name", "dpo", "--scope", "compliance", stdout=out, stderr=StringIO()
    )
    assert APIKey.objects.get(name="dpo").scope == "compliance"


@pytest.mark.parametrize("args", [["--tenant", "bad slug!", "--name", "k"], ["--tenant", "acme", "--name", "n" * 51]])
def test_create_api_key_refuses_bad_input(db, args):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("create_api_key", *args, stdout=StringIO(), stderr=StringIO())
    assert not APIKey.objects.exists()


# --- admin ----------------------------------------------------------------------------------


def test_admin_creates_a_key_shown_once_and_revokes_it(tenant):
    admin = User.objects.create_superuser("root", password="pw-root-123")
    client = APIClient()
    client.force_login(admin)
    response = client.post(
        "/admin/tenancy/apikey/add/",
        {"name": "from-admin", "tenant": tenant.pk, "scope": "agent"},
        follow=True,
    )
    assert response.status_code == 200
    api_key = APIKey.objects.get(name="from-admin")
    shown = [str(m) for m in response.context["messages"]]
    key = next(part for m in shown for part in m.split() if part.startswith(api_key.prefix + "."))
    key = key.rstrip(".")
    assert key_client(key).get(URL).status_code == 200
    client.post(
        "/admin/tenancy/apikey/",
        {"action": "revoke_keys", "_selected_action": [api_key.pk]},
        follow=True,
    )
    assert APIKey.objects.get(pk=api_key.pk).revoked
    assert_error(key_client(key).get(URL), 401, "not_authenticated")


# --- changes made in the admin or through the services take effect at once in this process ------


@pytest.fixture
def admin_client(db):
    client = APIClient()
    client.force_login(User.objects.create_superuser("root", password="pw-root-123"))
    return client


@pytest.fixture
def cached_key(tenant):
    """A key that worked once, so this process holds it verified."""
    api_key, key = api_key_create(tenant=tenant, name="k", expires_at=timezone.now() + timedelta(days=1))
    assert key_client(key).get(URL).status_code == 200
    return api_key, key_client(key)


def test_a_key_deleted_in_the_admin_is_401_at_once(cached_key, admin_client):
    api_key, client = cached_key
    response = admin_client.post(f"/admin/tenancy/apikey/{api_key.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not APIKey.objects.filter(pk=api_key.pk).exists()
    assert_error(client.get(URL), 401, "not_authenticated")


def test_keys_deleted_with_the_admins_bulk_action_are_401_at_once(cached_key, admin_client):
    api_key, client = cached_key
    admin_client.post(
        "/admin/tenancy/apikey/", {"action": "delete_selected", "_selected_action": [api_key.pk], "post": "yes"}
    )
    assert not APIKey.objects.filter(pk=api_key.pk).exists()
    assert_error(client.get(URL), 401, "not_authenticated")


def test_an_expiry_set_in_the_past_in_the_admin_is_401_at_once(cached_key, admin_client):
    api_key, client = cached_key
    past = timezone.localtime(timezone.now() - timedelta(minutes=1))
    response = admin_client.post(
        f"/admin/tenancy/apikey/{api_key.pk}/change/",
        {"name": "k", "expiry_date_0": past.strftime("%Y-%m-%d"), "expiry_date_1": past.strftime("%H:%M:%S")},
    )
    assert response.status_code == 302, response.content[:2000]
    assert APIKey.objects.get(pk=api_key.pk).has_expired
    assert_error(client.get(URL), 401, "not_authenticated")


def test_a_tenant_deleted_in_the_admin_makes_its_keys_401_at_once(cached_key, admin_client, tenant):
    _, client = cached_key
    response = admin_client.post(f"/admin/tenancy/tenant/{tenant.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not Tenant.objects.filter(pk=tenant.pk).exists()
    assert_error(client.get(URL), 401, "not_authenticated")
    assert_error(client.put(URL + "k/", {"value": 1}, format="json"), 401, "not_authenticated")


def test_services_that_stop_a_key_take_effect_at_once(tenant):
    stops = [
        lambda api_key: tenancy_services.api_key_update(api_key=api_key, name="k", expires_at=timezone.now()),
        lambda api_key: tenancy_services.api_key_delete(api_key=api_key),
        lambda api_key: tenancy_services.tenant_delete(tenant=api_key.tenant),
    ]
    for stop in stops:
        api_key, key = api_key_create(tenant=tenancy_services.tenant_get_or_create(slug="acme"), name="k")
        assert key_client(key).get(URL).status_code == 200
        stop(api_key)
        assert_error(key_client(key).get(URL), 401, "not_authenticated")


def test_renaming_a_key_or_extending_its_expiry_keeps_it_working(cached_key):
    api_key, client = cached_key
    tenancy_services.api_key_update(api_key=api_key, name="renamed", expires_at=timezone.now() + timedelta(days=30))
    assert client.get(URL).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_cached_key_whose_tenant_another_process_deleted_writes_nothing_and_is_401(tenant):
    """Another process deleted the tenant (a plain delete here, so this process's cache still holds
    the key): writes failed on the tenant's foreign key with a 500. They are 401, and so is every
    request after."""
    _, key = api_key_create(tenant=tenant, name="k")
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    assert client.get(URL).status_code == 200
    Tenant.objects.filter(pk=tenant.pk).delete()
    assert_error(client.put(URL + "k/", {"value": 1}, format="json"), 401, "not_authenticated")
    assert_error(client.post("/api/v1/sessions/", {"user_id": "u1"}, format="json"), 401, "not_authenticated")
    assert_error(client.get(URL), 401, "not_authenticated")
    assert not UserDatum.objects.exists() and not Session.objects.exists()
