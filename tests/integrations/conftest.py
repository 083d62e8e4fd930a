from __future__ import annotations

import itertools

import pytest

from agentstate.tenancy.services import tenant_get_or_create
from tests.client.keys import api_key_new

_tenants = itertools.count()


@pytest.fixture
def fresh_key(live_server, transactional_db):
    """Makes an API key of a new tenant, one per Hypothesis example: a tenant-wide read sees that
    example's calls only."""

    def make() -> str:
        return api_key_new(tenant_get_or_create(slug=f"differential-{next(_tenants)}"))

    return make
