"""The tests run with tests/settings.py and empty only a Redis database reserved for them, on
REDIS_URL's server: whatever database REDIS_URL itself names keeps its keys through a test run."""

import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from tests.fresh_process import ROOT
from tests.settings import redis_test_url


def test_pytest_runs_with_the_test_settings():
    assert os.environ["DJANGO_SETTINGS_MODULE"] == settings.SETTINGS_MODULE == "tests.settings"


@pytest.mark.parametrize(
    "url, environ, expected",
    [
        ("redis://127.0.0.1:6379/0", {}, "redis://127.0.0.1:6379/15"),
        ("redis://127.0.0.1:6379", {}, "redis://127.0.0.1:6379/15"),
        (
            "redis://:secret@cache.internal:6380/2",
            {"AGENTSTATE_TEST_REDIS_DB": "9"},
            "redis://:secret@cache.internal:6380/9",
        ),
        ("rediss://cache.internal/3?ssl_cert_reqs=none", {}, "rediss://cache.internal/15?ssl_cert_reqs=none"),
        ("redis://cache.internal?db=4", {}, "redis://cache.internal/15"),
        ("unix:///run/redis.sock?db=1", {}, "unix:///run/redis.sock?db=15"),
        # Naming REDIS_URL's own database explicitly is a choice to let the tests empty it.
        ("redis://127.0.0.1:6380/4", {"AGENTSTATE_TEST_REDIS_DB": "4"}, "redis://127.0.0.1:6380/4"),
        # pytest-xdist's workers count down from the reserved database, one each.
        ("redis://127.0.0.1:6379/0", {"PYTEST_XDIST_WORKER": "gw0"}, "redis://127.0.0.1:6379/15"),
        ("redis://127.0.0.1:6379/0", {"PYTEST_XDIST_WORKER": "gw2"}, "redis://127.0.0.1:6379/13"),
        (
            "redis://127.0.0.1:6379/0",
            {"AGENTSTATE_TEST_REDIS_DB": "9", "PYTEST_XDIST_WORKER": "gw1"},
            "redis://127.0.0.1:6379/8",
        ),
    ],
)
def test_the_reserved_database_is_on_redis_urls_server(url, environ, expected):
    assert redis_test_url(url, environ) == expected


@pytest.mark.parametrize(
    "url, environ, message",
    [
        ("redis://127.0.0.1:6379/15", {}, "REDIS_URL names database 15"),
        ("redis://127.0.0.1:6379/14", {"PYTEST_XDIST_WORKER": "gw1"}, "REDIS_URL names database 14"),
        (
            "redis://127.0.0.1:6379/0",
            {"AGENTSTATE_TEST_REDIS_DB": "1", "PYTEST_XDIST_WORKER": "gw2"},
            "More pytest-xdist",
        ),
        (
            "redis://127.0.0.1:6379/0",
            {"AGENTSTATE_TEST_REDIS_DB": "last"},
            "AGENTSTATE_TEST_REDIS_DB must be a database number",
        ),
    ],
)
def test_a_reserved_database_that_would_be_redis_urls_own_by_default_is_refused(url, environ, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        redis_test_url(url, environ)


@pytest.mark.database  # Redis, without pytest-django's fixtures
def test_the_cache_and_the_working_state_use_the_reserved_database():
    if not settings.REDIS_URL:
        pytest.skip("no REDIS_URL: the tests use no Redis")
    assert redis_test_url(os.environ["REDIS_URL"], os.environ) == settings.REDIS_URL
    assert settings.CACHES["default"]["LOCATION"] == settings.REDIS_URL


@pytest.mark.database  # Redis, without pytest-django's fixtures
def test_a_test_run_leaves_the_database_redis_url_names_untouched():
    """Put a key in REDIS_URL's own database, run pytest (which empties its Redis database when it
    starts), and find the key still there, while the same key in the reserved database is gone."""
    import redis

    configured = os.environ.get("REDIS_URL", "")
    if not configured:
        pytest.skip("needs REDIS_URL")
    theirs, ours = redis.Redis.from_url(configured), redis.Redis.from_url(redis_test_url(configured, os.environ))
    if theirs.connection_pool.connection_kwargs.get("db", 0) == ours.connection_pool.connection_kwargs.get("db", 0):
        pytest.skip("AGENTSTATE_TEST_REDIS_DB names REDIS_URL's own database: the run may empty it")
    key = f"agentstate-test-settings-{uuid.uuid4().hex}"
    theirs.set(key, "kept")
    ours.set(key, "scratch")
    # A fresh pytest on SQLite (no second test database on the server of DATABASE_URL), with the
    # settings module pyproject.toml names rather than the one this run exported.
    # Nor this run's PYTEST_ADDOPTS: CI's PostgreSQL stage selects `-m database` there, which would
    # deselect the one test the nested run is given.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "PYTEST_ADDOPTS") and not k.startswith("DATABASE_")
    }
    try:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                # In this process, not in workers of its own: it inherits this worker's
                # PYTEST_XDIST_WORKER, so it empties this worker's Redis database, not another's.
                "-n",
                "0",
                "-q",
                "tests/test_test_settings.py::test_pytest_runs_with_the_test_settings",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert theirs.get(key) == b"kept"
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert ours.get(key) is None
    finally:
        theirs.delete(key)
        ours.delete(key)
