"""Fixtures shared by every test module."""

import pytest
from django.conf import settings
from django.db import connection


@pytest.fixture(scope="session", autouse=True)
def _fresh_redis():
    """Working state in Redis is keyed by session pk, which restarts with each test database:
    start every run from an empty Redis database."""
    if settings.REDIS_URL:
        import redis

        redis.Redis.from_url(settings.REDIS_URL).flushdb()
    yield


@pytest.fixture
def tenant(db):
    from agentstate.tenancy.services import tenant_get_or_create

    return tenant_get_or_create(slug="acme")


@pytest.fixture
def other_tenant(db):
    from agentstate.tenancy.services import tenant_get_or_create

    return tenant_get_or_create(slug="globex")


@pytest.fixture
def postgres_only():
    """Skip, with a visible reason, tests that need PostgreSQL's row locks and real concurrency."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL); SQLite serialises writers")
