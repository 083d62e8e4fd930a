"""A live agentstate server and API keys for the client tests."""

import pytest


def _new_key(tenant, scope: str = "agent") -> str:
    from agentstate.tenancy.models import APIKey

    _, key = APIKey.objects.create_key(name="client-tests", tenant=tenant, scope=scope)
    return key


@pytest.fixture
def agent_key(transactional_db, tenant) -> str:
    return _new_key(tenant)


@pytest.fixture
def compliance_key(transactional_db, tenant) -> str:
    return _new_key(tenant, scope="compliance")


@pytest.fixture
def other_key(transactional_db, other_tenant) -> str:
    return _new_key(other_tenant)


@pytest.fixture
def client(live_server, agent_key):
    from agentstate.client import AgentStateClient

    with AgentStateClient(live_server.url, agent_key) as client:
        yield client
