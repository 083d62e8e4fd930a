"""The benchmark's own database: created before Django starts, dropped when the run ends.

SQLite (no ``DATABASE_URL``): a file in a temporary directory. PostgreSQL: ``<name>_bench`` on
the server of ``DATABASE_URL`` (the development or test database itself is never opened).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

BENCH_ERASURE_KEY = "bench:benchmark-only-erasure-key-0123456789"


def bench_database_url(source_url: str) -> str:
    """``DATABASE_URL`` with its database name replaced by ``<name>_bench``."""
    parts = urlsplit(source_url)
    name = parts.path.lstrip("/") or "agentstate"
    return urlunsplit(parts._replace(path=f"/{name}_bench"))


def _postgres_admin(url: str, statement: str) -> None:
    import psycopg

    parts = urlsplit(url)
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(statement)


def _postgres_exists(url: str) -> bool:
    import psycopg

    parts = urlsplit(url)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres"))) as conn:
        return (
            conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [parts.path.lstrip("/")]).fetchone()
            is not None
        )


def _quoted_name(url: str) -> str:
    name = urlsplit(url).path.lstrip("/")
    return '"' + name.replace('"', '""') + '"'


@contextlib.contextmanager
def bench_database(*, keep: bool = False, reuse: bool = False) -> Iterator[str]:
    """Point Django at a fresh benchmark database, migrate it, and drop it afterwards.

    Must run before ``django.setup()``: it sets ``DATABASE_URL`` for this process (and the
    servers it starts). ``keep=True`` leaves the database in place for inspection. ``reuse=True``
    (PostgreSQL) opens the database a kept run left, creating it only when missing, and keeps it
    again: a suite whose data takes long to build (search's 1,000,000 messages) builds it once."""
    source = os.environ.get("DATABASE_URL", "")
    tmpdir = None
    if source:
        url = bench_database_url(source)
        if not (reuse and _postgres_exists(url)):
            _postgres_admin(url, f"DROP DATABASE IF EXISTS {_quoted_name(url)} WITH (FORCE)")
            _postgres_admin(url, f"CREATE DATABASE {_quoted_name(url)}")
        keep = keep or reuse
    else:
        tmpdir = tempfile.mkdtemp(prefix="agentstate-bench-")
        url = f"sqlite:///{tmpdir}/bench.sqlite3"
    os.environ["DATABASE_URL"] = url
    # Production-like settings: no query log (DEBUG), erasure keys configured so the erased-subject
    # guard runs on create paths as it would in production.
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentstate_site.settings")
    os.environ.setdefault("AGENTSTATE_ERASURE_HMAC_KEYS", BENCH_ERASURE_KEY)
    os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
    # Cache and working state in the benchmark database too, never in a shared Redis.
    os.environ.pop("REDIS_URL", None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    call_command("createcachetable", verbosity=0)
    try:
        yield url
    finally:
        from django.db import connections

        connections.close_all()
        if keep:
            print(f"kept benchmark database: {url}")
        elif tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
        else:
            _postgres_admin(url, f"DROP DATABASE IF EXISTS {_quoted_name(url)} WITH (FORCE)")
