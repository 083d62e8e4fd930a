"""A live agentstate server and API keys for the client tests."""

import pytest

from tests.client.keys import api_key_new
from tests.client.sockets import serving_tls


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


@pytest.fixture
def tls_server(tmp_path):
    """An HTTPS server of its own (``serving_tls``): its URL, a context that trusts it, its connections."""
    with serving_tls(tmp_path) as served:
        yield served
