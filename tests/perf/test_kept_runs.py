"""Only complete runs land among the kept runs in benchmarks/results/, which the summary and
docs/PERFORMANCE.md read: a partial run (``--quick``, ``frameworks --framework NAME``) goes to a
scratch directory, or to ``--results`` anywhere else (the frameworks smoke run,
tests/perf/test_frameworks_benchmark.py, is written to the scratch directory)."""

from tests.perf.benchmark_runs import ROOT, benchmarks

KEPT = ROOT / "benchmarks" / "results"


def test_a_partial_run_is_refused_among_the_kept_runs():
    before = sorted(KEPT.iterdir())

    run = benchmarks("frameworks", "--framework", "sdk", "--results", KEPT)

    assert run.returncode == 1
    assert "a partial run (--framework) is never kept in benchmarks/results/" in run.stderr
    assert sorted(KEPT.iterdir()) == before
