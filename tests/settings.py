"""The settings pytest runs with (``[tool.pytest.ini_options]``): the service's own settings, read
from the same environment, with only what the tests need changed, each change saying why.

Tests that start a process of the service (manage.py, gunicorn) name ``agentstate_site.settings``
themselves: they test the settings a deployment gets, not these. Anything such a process must read
back stays readable by the service: e.g. passwords (tests/multinode's app servers check passwords
this process hashed), hashed here in the service's own format, only with fewer iterations.
"""

import os
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import global_settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.core.exceptions import ImproperlyConfigured

from agentstate_site.settings import *  # noqa: F403
from agentstate_site.settings import CACHES, REDIS_URL

# The Redis database number the tests own on REDIS_URL's server. Working state in Redis is keyed
# by session pk, which restarts with each test database, so every run starts by flushing this
# database (the root conftest.py); whatever database REDIS_URL itself names is never touched.
REDIS_TEST_DB_DEFAULT = 15


def redis_test_url(url: str, environ: Mapping[str, str]) -> str:
    """``url`` (REDIS_URL) with its database number replaced by the one reserved for tests:
    ``AGENTSTATE_TEST_REDIS_DB``, default 15, on the same server and credentials. pytest-xdist's
    workers each get their own, counting down from it (gw0 that number, gw1 the one below, ...):
    session pks restart in each worker's test database, so shared keys would collide, and each
    worker empties its database when it starts."""
    chosen = environ.get("AGENTSTATE_TEST_REDIS_DB", "").strip()
    try:
        reserved = int(chosen or REDIS_TEST_DB_DEFAULT)
    except ValueError:
        raise ImproperlyConfigured(f"AGENTSTATE_TEST_REDIS_DB must be a database number, not {chosen!r}.") from None
    reserved -= int(environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    if reserved < 0:
        raise ImproperlyConfigured("More pytest-xdist workers than Redis databases below AGENTSTATE_TEST_REDIS_DB.")
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    if parts.scheme == "unix":  # a socket path: the number is the query's db
        named = int(query.get("db", 0))
        query["db"] = str(reserved)
        reserved_url = f"{url.partition('?')[0]}?{urlencode(query)}"  # urlunsplit would drop the "//"
    else:
        named = int(parts.path.strip("/") or query.get("db", 0))
        query.pop("db", None)
        reserved_url = urlunsplit(parts._replace(path=f"/{reserved}", query=urlencode(query)))
    if named == reserved and not chosen:
        raise ImproperlyConfigured(
            f"REDIS_URL names database {reserved}, one the tests flush by default: set AGENTSTATE_TEST_REDIS_DB "
            "to a database number the tests may empty (each pytest-xdist worker also empties the ones below it)."
        )
    return reserved_url


# The tests' Redis database (see above), for the cache and the working state alike.
REDIS_TEST_URL = redis_test_url(REDIS_URL, os.environ) if REDIS_URL else ""
REDIS_URL = REDIS_TEST_URL
if REDIS_URL:
    CACHES = {**CACHES, "default": {**CACHES["default"], "LOCATION": REDIS_URL}}

# Artifacts' files in a directory of this run's own, never the checkout's (tests that look at the
# raw files point the alias at a directory of theirs).
if STORAGES["artifacts"]["BACKEND"].endswith("FileSystemStorage"):  # noqa: F405
    import tempfile

    STORAGES = {
        **STORAGES,  # noqa: F405
        "artifacts": {
            **STORAGES["artifacts"],  # noqa: F405
            "OPTIONS": {"location": tempfile.mkdtemp(prefix="agentstate-test-artifacts-")},
        },
    }

# The tests turn tracing on themselves (tests/tracing), never from an OTEL_* variable of the shell's.
TRACING = False


class OneIterationPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """The service's hasher (PBKDF2-SHA256, the same algorithm name and hash format) at one
    iteration instead of a million: each password a test sets or checks costs microseconds, not
    about 0.3 s. A hash records its iterations, so the service's own hasher still checks the ones
    made here (tests/multinode), and a hash the service made is checked here."""

    iterations = 1


PASSWORD_HASHERS = ["tests.settings.OneIterationPBKDF2PasswordHasher", *global_settings.PASSWORD_HASHERS]
