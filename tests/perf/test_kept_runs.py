"""Only complete runs land among the kept runs in benchmarks/results/, which the summary and
docs/PERFORMANCE.md read: a partial run (``--quick``, ``frameworks --framework NAME``) goes to a
scratch directory, or to ``--results`` anywhere else (the frameworks smoke run,
tests/perf/test_frameworks_benchmark.py, is written to the scratch directory)."""

import re
from pathlib import Path

from tests.perf.benchmark_runs import ROOT, benchmarks

KEPT = ROOT / "benchmarks" / "results"


def test_a_partial_run_is_refused_among_the_kept_runs():
    before = sorted(KEPT.iterdir())

    run = benchmarks("frameworks", "--framework", "sdk", "--results", KEPT)

    assert run.returncode == 1
    assert "a partial run (--framework) is never kept in benchmarks/results/" in run.stderr
    assert sorted(KEPT.iterdir()) == before


def test_a_partial_run_without_results_goes_to_a_scratch_directory():
    """The run names where it writes before it measures anything: here it stops there, its database
    refusing connections, and what it named is outside the kept runs."""
    before = sorted(KEPT.iterdir())

    run = benchmarks("frameworks", "--framework", "sdk", database_url="postgres://postgres@127.0.0.1:1/agentstate")

    announced = re.search(r"^--framework: a partial run, written to (\S+) ", run.stdout, re.M)
    assert announced, run.stdout + run.stderr[-2000:]
    scratch = Path(announced[1])
    assert scratch.is_dir() and not scratch.resolve().is_relative_to(KEPT.resolve())
    scratch.rmdir()  # empty: the run stopped before measuring
    assert sorted(KEPT.iterdir()) == before
