"""Fixtures of the API tests: keys of two tenants and clients that send them."""

import pytest
from rest_framework.test import APIClient

from agentstate.tenancy import selectors as tenancy_selectors
from agentstate.tenancy.services import api_key_create


@pytest.fixture(autouse=True)
def _fresh_key_cache():
    """Each test starts with an empty verified-key cache (keys of earlier tests are gone)."""
    tenancy_selectors.api_key_cache_clear()
    yield
    tenancy_selectors.api_key_cache_clear()


@pytest.fixture
def agent_key(tenant):
    return api_key_create(tenant=tenant, name="agent")[1]


@pytest.fixture
def api(agent_key):
    """A client of tenant "acme" with an agent key (Authorization: Api-Key ...)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {agent_key}")
    return client


@pytest.fixture
def other_api(other_tenant):
    """A client of tenant "globex": must never see acme's rows."""
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(tenant=other_tenant, name="other")[1])
    return client


@pytest.fixture
def anon():
    return APIClient()


def assert_error(response, status: int, code: str, field: str | None = None):
    """The one error shape, with the expected status and code (and the named field)."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    if field is not None:
        assert field in error["fields"], error
    return error
