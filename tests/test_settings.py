"""Settings come from the environment; with nothing set the service runs on a SQLite file in the
checkout whose connections queue writers (IMMEDIATE), use WAL and overwrite deleted rows."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.db.utils import ConnectionHandler

from tests.fresh_process import ROOT, settings_process
from tools import pgcluster


def _settings(**env: str) -> dict:
    """The settings a fresh process computes from exactly ``env`` (nothing inherited that they read)."""
    result = settings_process(
        "'database': s.DATABASES['default'], 'debug': s.DEBUG, 'allowed_hosts': s.ALLOWED_HOSTS, "
        "'secret_key': s.SECRET_KEY, 'cache': s.CACHES['default']['BACKEND'], 'working_state': s.WORKING_STATE_BACKEND",
        **env,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def default_settings() -> dict:
    return _settings()


def test_with_no_environment_the_database_is_a_sqlite_file_in_the_checkout(default_settings):
    database = default_settings["database"]
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert Path(database["NAME"]) == ROOT / "agentstate.sqlite3"
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert default_settings["debug"] is True
    assert (default_settings["cache"], default_settings["working_state"]) == (
        "django.core.cache.backends.db.DatabaseCache",
        "database",
    )


@pytest.fixture
def scratch_connection(default_settings, tmp_path, django_db_blocker):
    """A real Django connection with the default settings' options, on a scratch file."""
    probe = ConnectionHandler({"default": {**default_settings["database"], "NAME": str(tmp_path / "probe.sqlite3")}})[
        "default"
    ]
    with django_db_blocker.unblock():
        yield probe
        probe.close()


def test_sqlite_connections_are_kept_between_requests_like_postgresql_ones(default_settings):
    """Opening a SQLite connection (and running its pragmas) per request was the largest single
    cost of a small API request; DJANGO_CONN_MAX_AGE still says how long one lives."""
    assert default_settings["database"]["CONN_MAX_AGE"] == 60
    assert _settings(DJANGO_CONN_MAX_AGE="0")["database"]["CONN_MAX_AGE"] == 0


def test_default_sqlite_connections_use_wal_and_secure_delete(scratch_connection):
    with scratch_connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA secure_delete")
        assert cursor.fetchone()[0] == 1


def test_default_sqlite_transactions_take_the_write_lock_up_front(scratch_connection):
    """IMMEDIATE: a second writer waits at BEGIN instead of failing later with "database is locked"."""
    scratch_connection.ensure_connection()
    other = sqlite3.connect(scratch_connection.settings_dict["NAME"], timeout=0, isolation_level=None)
    try:
        scratch_connection.set_autocommit(
            False, force_begin_transaction_with_broken_autocommit=True
        )  # as atomic() does
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        scratch_connection.rollback()
        scratch_connection.set_autocommit(True)
        other.execute("BEGIN IMMEDIATE")  # free again once the transaction is over
        other.execute("ROLLBACK")
    finally:
        other.close()


@pytest.mark.django_db
def test_the_running_sqlite_connection_has_the_same_options():
    if connection.vendor != "sqlite":
        pytest.skip("runs on SQLite only (DATABASE_URL is set)")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete")
        assert cursor.fetchone()[0] == 1
    assert connection.transaction_mode == "IMMEDIATE"


def test_environment_variables_select_postgresql_redis_and_the_django_settings():
    configured = _settings(
        DATABASE_URL="postgres://agent:pw@db.internal:5433/agentstate",
        REDIS_URL="redis://cache.internal:6379/2",
        DJANGO_DEBUG="false",
        DJANGO_ALLOWED_HOSTS="a.example, b.example",
        DJANGO_SECRET_KEY="k" * 10 + "-from-the-environment",
    )
    database = configured["database"]
    # Django's backend, refusing commits no synchronous standby confirmed (agentstate.postgresql).
    assert (database["ENGINE"], database["COMMIT_TIMEOUT"]) == ("agentstate.postgresql", 5)
    assert (database["NAME"], database["HOST"], database["PORT"], database["USER"]) == (
        "agentstate",
        "db.internal",
        5433,
        "agent",
    )
    assert "transaction_mode" not in database.get("OPTIONS", {})
    assert (configured["cache"], configured["working_state"]) == (
        "django.core.cache.backends.redis.RedisCache",
        "redis",
    )
    assert configured["debug"] is False
    assert configured["allowed_hosts"] == ["a.example", "b.example"]
    assert configured["secret_key"] == "k" * 10 + "-from-the-environment"


def test_a_multi_host_database_url_gives_libpq_every_host_and_port_in_order():
    """libpq's failover form, which dj-database-url alone refuses as an invalid URL."""
    database = _settings(
        DATABASE_URL="postgres://agent:pw@node1:5433,node2,[::1]:5434/agentstate?target_session_attrs=read-write"
    )["database"]
    assert (database["HOST"], database["PORT"], database["NAME"], database["USER"], database["PASSWORD"]) == (
        "node1,node2,::1",
        "5433,5432,5434",  # one port per host: libpq's default for the one not given
        "agentstate",
        "agent",
        "pw",
    )
    assert database["OPTIONS"]["target_session_attrs"] == "read-write"  # beside the waits' options
    assert _settings(DATABASE_URL="postgres://agent@node1,node2/agentstate")["database"]["PORT"] == ""


@pytest.mark.parametrize(
    "hosts",
    # One bad host in the quick loop (each case starts a Python process); the other shapes in the slow set.
    [
        "node1:x,node2",
        *(
            pytest.param(hosts, marks=pytest.mark.crosscheck)
            for hosts in ("node1:70000,node2", "node1,,node2", "node1,node2:")
        ),
    ],
)
def test_a_multi_host_database_url_with_a_bad_host_stops_start_up_naming_it(hosts):
    result = settings_process("'database': s.DATABASES['default']", DATABASE_URL=f"postgres://agent@{hosts}/agentstate")
    assert result.returncode != 0
    assert "is not a host or host:port" in result.stderr


@pytest.mark.django_db
def test_a_multi_host_database_url_connects_to_the_first_host_that_accepts_writes():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL)")
    from agentstate_site.settings import database_url_parse

    real = connection.settings_dict
    closed_port = pgcluster.free_port()  # nothing listens there
    url = f"postgres://{real['USER']}@{real['HOST']}:{closed_port},{real['HOST']}:{real['PORT']}/{real['NAME']}"
    handler = ConnectionHandler({"default": database_url_parse(f"{url}?target_session_attrs=read-write")})
    try:
        with handler["default"].cursor() as cursor:
            cursor.execute("SELECT inet_server_port()")
            assert cursor.fetchone()[0] == int(real["PORT"])
    finally:
        handler.close_all()


def _project_paths_named_by_settings() -> list[str]:
    """The dotted paths of our own code that Django and DRF import from settings, in whatever order
    a command's checks reach them (the wheel's quickstart imported the CSRF view before the URLconf)."""
    from django.conf import settings

    named = [settings.CSRF_FAILURE_VIEW, settings.ROOT_URLCONF, *settings.MIDDLEWARE]
    for value in settings.REST_FRAMEWORK.values():
        named.extend(value if isinstance(value, list) else [value])
    own = ("agentstate.", "sessions_app.", "userdata_app.")
    return sorted({path for path in named if isinstance(path, str) and path.startswith(own)})


@pytest.mark.servers
@pytest.mark.parametrize("dotted_path", _project_paths_named_by_settings())
def test_each_path_the_settings_name_imports_first_in_a_fresh_process(dotted_path):
    script = (
        "import django; django.setup()\n"
        "from django.utils.module_loading import import_string\n"
        "from importlib import import_module\n"
        f"path = {dotted_path!r}\n"
        "try:\n    import_module(path)\nexcept ImportError:\n    import_string(path)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "agentstate_site.settings"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
