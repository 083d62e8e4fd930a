"""``python -m benchmarks search --reuse-db`` builds its tenants once and searches them again in the
next run, as a contributor runs it on PostgreSQL (the tests never import the benchmarks); the other
suites refuse the flag, and ``summary`` tables runs that measured no append."""

import json
import os
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.perf.benchmark_runs import benchmarks

SOURCE_URL = os.environ.get("DATABASE_URL", "")


@pytest.fixture
def reuse_url():
    """A database name of this test's own on the tests' PostgreSQL server; its ``_bench`` database
    (what the benchmark builds and keeps) is dropped afterwards."""
    parts = urlsplit(SOURCE_URL)
    url = urlunsplit(parts._replace(path=f"/{parts.path.lstrip('/') or 'agentstate'}_searchreuse"))
    yield url
    import psycopg

    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{urlsplit(url).path.lstrip("/")}_bench" WITH (FORCE)')


@pytest.mark.servers
@pytest.mark.database  # the tests' PostgreSQL server, without pytest-django's fixtures
@pytest.mark.skipif(not SOURCE_URL.startswith("postgres"), reason="--reuse-db keeps a PostgreSQL database")
def test_a_reused_database_is_built_once_and_searched_again(tmp_path, reuse_url):
    first = benchmarks("search", "--quick", "--reuse-db", "--results", tmp_path / "first", database_url=reuse_url)
    second = benchmarks("search", "--quick", "--reuse-db", "--results", tmp_path / "second", database_url=reuse_url)

    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "filling a tenant of 10,000 messages" in first.stdout
    assert "filling" not in second.stdout and "the tenant of 10,000 messages a kept run filled" in second.stdout
    runs = [
        json.loads(next((tmp_path / name).glob("search-postgresql-*.json")).read_text()) for name in ("first", "second")
    ]
    assert [[s["results"] for s in run["searches"]] for run in runs] == [[10, 20], [10, 20]]
    assert all(run["append"] == {} for run in runs)  # it would rebuild the index of every kept message

    for run_dir in ("first", "second"):
        (tmp_path / "both").mkdir(exist_ok=True)
        for kept in (tmp_path / run_dir).glob("*.json"):
            kept.rename(tmp_path / "both" / kept.name)
    markdown = benchmarks("summary", "--results", tmp_path / "both", "--markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert "Message search on postgresql, 2 runs" in markdown.stdout
    assert "Single-message appends" not in markdown.stdout


def test_a_suite_that_cannot_reuse_its_data_refuses_the_flag():
    run = benchmarks("scaling", "--reuse-db")

    assert run.returncode != 0
    assert "--reuse-db: only search" in run.stderr
