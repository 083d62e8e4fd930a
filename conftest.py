"""Fixtures shared by every test module (fixtures live in conftest.py files; plain helpers such as
factories live in modules without a ``test_`` prefix, and no module imports a test module or a
conftest)."""

import copy
import gc
import importlib.abc
import re
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression
from django.conf import settings
from django.db import connection, connections
from django.db.utils import load_backend

from tests import db_reset

# The marks (pyproject.toml) of what the quick loop, `pytest -m "not slow"`, leaves out; each also
# counts as slow, so one expression skips them all.
SLOW_KINDS = ("fuzz", "servers", "browser", "conformance", "crosscheck", "scale")
# pytest-django's fixtures that open the test database; item.fixturenames holds every fixture a
# test requests through others too (``api`` -> ``tenant`` -> ``db``).
DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server"}
)
# The many-example forms (fuzzing, cross products, many random sequences) of the rules a test
# checks on the database run on one database, PostgreSQL, the one deployed, where a database error
# turns into a 5xx: on SQLite they skip, and the same rules' few fixed examples (the quick loop's)
# run there. CI's PostgreSQL stage runs them; a run on SQLite alone says where they ran.
MANY_EXAMPLES = ("fuzz", "crosscheck")
ON_POSTGRESQL_ONLY = pytest.mark.skip(
    reason="many examples: run on PostgreSQL only (set DATABASE_URL); the same rules' fixed examples run on SQLite"
)
# A skip that names the configured stores: the test runs only on PostgreSQL or with Redis.
SKIPPED_FOR_THE_STORES = re.compile(r"\b(DATABASE_URL|REDIS_URL)\b|needs PostgreSQL|on PostgreSQL")


def uses_the_stores(item: pytest.Item) -> bool:
    """Whether a test reaches the configured database or Redis: only these run again in .ci/run's
    PostgreSQL + Redis stage (`-m database`); every other test runs once, in the SQLite stage."""
    return bool(DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ()))) or any(
        item.get_closest_marker(mark) for mark in ("database", "django_db", "postgres")
    )


ROOT = Path(__file__).resolve().parent

# A transactional test empties only the tables it left rows in, not every table and post_migrate's
# again (tests/db_reset.py).
db_reset.install()


# The framework backends AGENTSTATE_BACKENDS leaves out. A test needs one when it imports its
# package (at the top of its module, in a helper, a fixture or its body: the import is what skips),
# when its id names it (its file, its function or a parameter: test_adk_*.py, test_a_langgraph_...,
# [sessions_app_langgraphthread], the API's /api/v1/adk/...), or when it is marked
# ``needs_backends(name, ...)`` (none named: every one, e.g. a table or a doc naming each one's
# data); it then skips, naming the backend. A new test file is covered the day it is written.
LEFT_OUT = frozenset(settings.BACKENDS) - frozenset(settings.BACKENDS_INSTALLED)
# How a test names a backend when not (only) by its package's name: artifacts are ADK's.
NAMES = {"adk": "adk|artifact", "openai_agents": "openai"}
NAMED = re.compile(rf"(?<![a-z0-9])({'|'.join(NAMES.get(b, b) for b in LEFT_OUT) or '(?!)'})", re.IGNORECASE)


def _left_out(backend: str) -> str:
    return f"needs the {backend} backend, which AGENTSTATE_BACKENDS leaves out"


def _needs_left_out(item: pytest.Item) -> str | None:
    """The left-out backend ``item`` names, or one of them if it needs them all."""
    if marked := item.get_closest_marker("needs_backends"):
        needed = LEFT_OUT.intersection(marked.args or LEFT_OUT)
        if needed:
            return min(needed)
    named = NAMED.search(f"{item.path.name}::{item.name}")
    if named is None:
        return None
    return next(b for b in LEFT_OUT if re.fullmatch(NAMES.get(b, b), named.group(1), re.IGNORECASE))


class _LeftOutBackends(importlib.abc.MetaPathFinder):
    """Importing a left-out backend would register its models (their app labels are installed) and
    the system check would report them: the import skips the test (or the module) instead."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        package, _, rest = fullname.partition(".")
        backend = rest.partition(".")[0]
        if package == "backends" and backend in LEFT_OUT:
            raise pytest.skip.Exception(_left_out(backend), allow_module_level=True)


if LEFT_OUT:
    sys.meta_path.insert(0, _LeftOutBackends())


# The smoke set the core must pass with any subset of the framework backends (AGENTSTATE_BACKENDS):
# framework-neutral modules of the API, the admin, erasure and export (.ci/run reads the same list).
ANY_BACKENDS = frozenset((ROOT / "tests" / "any_backends.txt").read_text().split())


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    on_sqlite = connection.vendor == "sqlite"
    for item in items:
        if item.path.relative_to(ROOT).as_posix() in ANY_BACKENDS:
            item.add_marker(pytest.mark.any_backends)
        if backend := _needs_left_out(item):
            item.add_marker(pytest.mark.skip(reason=_left_out(backend)))
        if any(item.get_closest_marker(kind) for kind in SLOW_KINDS):
            item.add_marker(pytest.mark.slow)
        if uses_the_stores(item) and not item.get_closest_marker("database"):
            item.add_marker(pytest.mark.database)
        if on_sqlite and item.get_closest_marker("database") and any(map(item.get_closest_marker, MANY_EXAMPLES)):
            item.add_marker(ON_POSTGRESQL_ONLY)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What is loaded once the tests are collected (the frameworks, Django, every test item) stays
    for the run: the garbage collector no longer walks it, and runs a tenth as often. It took about
    a seventh of a worker's CPU; a test that needs a collection calls gc.collect() itself."""
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # around schemathesis's, which turns its tests into collectors
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object):
    """A test function that generates its cases when collected (Schemathesis: one per operation,
    several seconds a process) is not generated in a run whose -m leaves it out whether or not it
    reaches the stores: the quick loop would deselect every case. --collect-only still generates
    them, to count the suite."""
    made = yield
    config = collector.config
    generated = isinstance(made, pytest.Collector) and not isinstance(made, pytest.Class)
    if not generated or not config.option.markexpr or config.option.collectonly:
        return made
    marks = {mark.name for mark in (*collector.iter_markers(), *getattr(obj, "pytestmark", ()))}
    if marks & set(SLOW_KINDS):
        marks.add("slow")

    def selected(present: set[str]) -> bool:
        def marked(mark: str, /, **_: object) -> bool:
            return mark in present

        return Expression.compile(config.option.markexpr).evaluate(marked)

    # Its fixtures, which decide the database mark, are not known yet: left out only if either way.
    return made if selected(marks) or selected(marks | {"database"}) else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test that skips for want of PostgreSQL or Redis without reaching them through
    pytest-django would be left out of the one stage that has them: it fails, naming the mark."""
    report = yield
    if (
        report.skipped
        and not hasattr(report, "wasxfail")
        and not item.get_closest_marker("database")
        and isinstance(report.longrepr, tuple)
    ):
        reason = report.longrepr[2]
        if SKIPPED_FOR_THE_STORES.search(reason):
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} skips ({reason}) but is not marked database, so .ci/run's PostgreSQL + Redis "
                "stage (-m database) never runs it: add @pytest.mark.database"
            )
    return report


def redis_test_db_flush() -> None:
    """Empty the Redis database reserved for tests (tests/settings.py), and no other: under any
    other settings module the run stops before touching Redis."""
    if not settings.REDIS_URL:
        return
    if getattr(settings, "REDIS_TEST_URL", None) != settings.REDIS_URL:
        pytest.exit(
            "Refusing to flush REDIS_URL's database: run the tests with DJANGO_SETTINGS_MODULE=tests.settings "
            "(pyproject.toml), which moves them to a Redis database of their own.",
            returncode=4,
        )
    import redis

    redis.Redis.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture(scope="session", autouse=True)
def _fresh_redis():
    """Working state in Redis is keyed by session pk, which restarts with each test database:
    start every run from an empty (reserved) Redis database."""
    redis_test_db_flush()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings):
    """SQLite's in-memory test database is copied from a migrated template rather than migrated in
    every pytest-xdist worker (tests/sqlite_template.py)."""
    if connection.vendor == "sqlite":
        from tests.sqlite_template import TemplateCreation

        connection.creation = TemplateCreation(connection)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test databases, dropped at the end without waiting: PostgreSQL refuses to
    drop a database in use, after waiting up to 5 s for its other sessions to end, so they are ended
    first (a role may end its own sessions). Connections a test's threads opened and left to the
    garbage collector are such sessions, and so are PgBouncer's in transaction mode
    (DATABASE_TRANSACTION_POOLING), kept open after the tests close theirs."""
    yield
    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection._nodb_cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [connection.settings_dict["NAME"]],
        )


@pytest.fixture(autouse=True)
def _fresh_key_cache():
    """Each test starts with an empty verified-key cache (keys of earlier tests are gone)."""
    from agentstate.tenancy import selectors as tenancy_selectors

    tenancy_selectors.api_key_cache_clear()
    yield
    tenancy_selectors.api_key_cache_clear()


@pytest.fixture(autouse=True)
def _fresh_vector_cache():
    """Each test starts with no worker copy of vectors (a test database may give ids again)."""
    from userdata_app.memory import vector_cache

    vector_cache.clear()


@pytest.fixture
def admin_user(db, django_user_model):
    """pytest-django's superuser for ``admin_client``, without a password: ``admin_client`` logs in
    with ``force_login``, so none is hashed."""
    return django_user_model.objects.create_superuser("admin", "admin@example.invalid")


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


# --- API callers: keys of two tenants and clients that send them -------------------------------


@pytest.fixture
def agent_key(tenant):
    from agentstate.tenancy.services import api_key_create

    return api_key_create(tenant=tenant, name="agent")[1]


@pytest.fixture
def api(agent_key):
    """A client of tenant "acme" with an agent key (Authorization: Api-Key ...)."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {agent_key}")
    return client


@pytest.fixture
def other_api(other_tenant):
    """A client of tenant "globex": must never see acme's rows."""
    from rest_framework.test import APIClient

    from agentstate.tenancy.services import api_key_create

    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(tenant=other_tenant, name="other")[1])
    return client


@pytest.fixture
def anon():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def victim(tenant):
    """acme's u1/s1 with one of everything, for the cross-tenant tests (tests/api/cross_tenant.py)."""
    from backends.adk.people.artifacts.services import artifact_save
    from sessions_app import services
    from userdata_app import services as userdata_services
    from userdata_app.memory.services import memory_batch

    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1", metadata={"mine": True})
    services.message_append(session=session, messages=[{"content": "secret"}])
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"mine": True})
    services.working_state_replace(session=session, data={"mine": True})
    services.checkpoint_create(session=session, label="cp")
    services.transition_record(session=session, to_agent="b")
    userdata_services.user_datum_set(tenant=tenant, user_id="u1", key="email", value="me@example.com")
    memory = {"op": "put", "namespace": ["users", "u1", "facts"], "key": "food", "value": {"mine": "secret"}}
    memory_batch(tenant=tenant, ops=[memory])
    artifact = {"text": "mine"}
    artifact_save(tenant=tenant, app_name="app", user_id="u1", session_id="s1", filename="note.txt", artifact=artifact)
    return session


# --- Replicas for the router's tests: a second connection to the test database, as Django's test
# mirror makes it. It proves where each query goes and what operators are shown, not replication
# (tests/multinode does that against a real streaming replica).
REPLICA = "replica_test"  # the alias of the replica fixture
DEAD = "replica_dead"


def _alias(name: str, **changes) -> str:
    """A connection under ``name`` to the test database (with ``changes``), made at run time as
    Django makes dynamic connections: outside settings.DATABASES, so no test database is built."""
    settings_dict = {**copy.deepcopy(connections["default"].settings_dict), **changes}
    connections[name] = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, name)
    return name


@pytest.fixture
def replica(settings):
    """One healthy replica alias (a mirror of the test database) configured for the router."""
    _alias(REPLICA)
    settings.DATABASE_REPLICAS = [REPLICA]
    from agentstate import db_router
    from agentstate.tenancy import selectors as tenancy_selectors

    db_router.replica_verdicts_clear()
    tenancy_selectors.api_key_cache_clear()
    yield REPLICA
    db_router.replica_verdicts_clear()
    for name in (REPLICA, DEAD):
        if hasattr(connections._connections, name):
            connections[name].close()
            del connections[name]


@pytest.fixture
def dead_replica(replica, settings):
    """A replica alias nothing answers on (a closed port, or a file in a missing directory)."""
    if connection.vendor == "postgresql":
        _alias(DEAD, PORT="1", OPTIONS={"connect_timeout": 2})
    else:
        _alias(DEAD, NAME="/nonexistent-directory/replica.sqlite3", OPTIONS={})
    settings.DATABASE_REPLICAS = [DEAD]
    return DEAD
