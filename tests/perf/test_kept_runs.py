"""Only complete runs land among the kept runs in benchmarks/results/, which the summary and
docs/PERFORMANCE.md read: a partial run (``--quick``, ``frameworks --framework NAME``) goes to a
scratch directory, or to ``--results`` anywhere else."""

import re
import shutil
from pathlib import Path

import pytest

from tests.perf.benchmark_runs import ROOT, benchmarks

KEPT = ROOT / "benchmarks" / "results"


def test_a_partial_run_is_refused_among_the_kept_runs():
    before = sorted(KEPT.iterdir())

    run = benchmarks("frameworks", "--framework", "sdk", "--results", KEPT)

    assert run.returncode == 1
    assert "a partial run (--framework) is never kept in benchmarks/results/" in run.stderr
    assert sorted(KEPT.iterdir()) == before


@pytest.mark.servers  # a private PostgreSQL and gunicorn, in a fresh process
@pytest.mark.skipif(
    not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")), reason="PostgreSQL's server programs are missing"
)
def test_a_partial_run_without_results_is_written_to_a_scratch_directory():
    before = sorted(KEPT.iterdir())

    run = benchmarks("frameworks", "--framework", "sdk", "--quick")

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    written = Path(re.search(r"^results: (.+)$", run.stdout, re.M)[1])
    try:
        assert sorted(KEPT.iterdir()) == before
        assert not written.is_relative_to(KEPT) and written.name.startswith("frameworks-postgresql-")
    finally:
        shutil.rmtree(written.parent, ignore_errors=True)
