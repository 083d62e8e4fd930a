"""A compliance key reads its tenant's retention policy; agent keys are refused; another tenant's
policy never shows."""

import pytest
from rest_framework.test import APIClient

from agentstate.tenancy.services import api_key_create
from sessions_app import services
from tests.api.assertions import assert_error

pytestmark = pytest.mark.django_db
URL = "/api/v1/compliance/retention/"


@pytest.fixture
def compliance_api(tenant):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name='dpo', scope='compliance')[1]}")
    return client


@pytest.mark.needs_backends("langgraph")
def test_a_compliance_key_reads_its_tenants_policy(compliance_api, tenant, other_tenant):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=30, keep_latest_checkpoints=10)
    services.retention_policy_save(tenant=other_tenant, keep_latest_rounds=1)

    body = compliance_api.get(URL).json()

    assert body["configured"] is True
    assert {k: v for k, v in body.items() if k not in ("configured", "updated_at")} == {
        "delete_ended_after_days": 30,
        "end_idle_after_days": None,
        "keep_latest_rounds": None,
        "keep_latest_checkpoints": 10,
        "drop_messages_after_days": None,
    }


def test_no_policy_reads_as_keep_everything(compliance_api):
    body = compliance_api.get(URL).json()

    assert body["configured"] is False and body["updated_at"] is None
    assert all(
        body[rule] is None for rule in ("delete_ended_after_days", "keep_latest_rounds", "drop_messages_after_days")
    )


def test_an_agent_key_is_refused(api):
    assert_error(api.get(URL), 403, "permission_denied")
