"""A live agentstate server and API keys for the client tests."""

import pytest

from tests.client.keys import api_key_new


@pytest.fixture
def agent_key(transactional_db, tenant) -> str:
    return api_key_new(tenant)


@pytest.fixture
def compliance_key(transactional_db, tenant) -> str:
    return api_key_new(tenant, scope="compliance")


@pytest.fixture
def other_key(transactional_db, other_tenant) -> str:
    return api_key_new(other_tenant)


@pytest.fixture
def client(live_server, agent_key):
    from agentstate.client import AgentStateClient

    with AgentStateClient(live_server.url, agent_key) as client:
        yield client
