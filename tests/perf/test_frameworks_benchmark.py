"""``python -m benchmarks frameworks --quick`` runs end to end, as a contributor runs it (the tests
never import the benchmarks): every framework's calls measured on agentstate, on the framework's
own PostgreSQL store and on its SQLite store, agentstate's requests counted, the floor measured,
and every target of issue 26 judged from the run; ``summary`` turns the run into the doc's tables."""

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.perf.benchmark_runs import ROOT, benchmarks

KEPT = ROOT / "benchmarks" / "results"

pytestmark = [
    pytest.mark.servers,  # starts PostgreSQL and gunicorn in a fresh process
    pytest.mark.skipif(
        not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")), reason="PostgreSQL's server programs are missing"
    ),
]


def test_the_quick_run_measures_every_store_counts_requests_and_judges_every_target(request):
    before = sorted(KEPT.iterdir())
    run = benchmarks("frameworks", "--quick", "--note", "a smoke run")  # a partial run: to a scratch directory

    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    kept = Path(re.search(r"^results: (.+)$", run.stdout, re.M)[1])
    request.addfinalizer(lambda: shutil.rmtree(kept.parent, ignore_errors=True))
    assert sorted(KEPT.iterdir()) == before and not kept.is_relative_to(KEPT)  # only complete runs are kept
    result = json.loads(kept.read_text())
    assert result["machine"]["database"].startswith("PostgreSQL") and result["note"] == "a smoke run"
    assert result["floor_ms"] > 0
    columns = result["columns"]
    for framework in ("Google ADK", "LangGraph", "OpenAI Agents SDK"):
        calls = {(c["operation"], c["size"]) for c in columns if c["framework"] == framework}
        for role in ("agentstate", "peer", "beside"):
            measured = [c for c in columns if c["framework"] == framework and c["role"] == role]
            assert {(c["operation"], c["size"]) for c in measured} == calls, (framework, role)
            assert all(c["n"] == result["reps"] and c["median_ms"] > 0 for c in measured)
    assert all(c["requests"] >= 1 for c in columns if c["role"] == "agentstate" and c["framework"] != "HTTP")
    assert all(c["requests"] is None for c in columns if c["role"] != "agentstate")

    targets = result["targets"]
    assert len([t for t in targets if t["target"] == "work above the floor ≤ peer"]) == len(
        [c for c in columns if c["role"] == "peer"]
    )
    assert {t["framework"] for t in targets if "the peer" in t["target"]} == {
        "Google ADK",
        "LangGraph",
        "OpenAI Agents SDK",
    }
    assert any(t["target"].startswith("flat:") for t in targets)
    assert all(isinstance(t["met"], bool) for t in targets)

    markdown = benchmarks("summary", "--results", kept.parent, "--markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert "<!-- benchmarks:summary frameworks postgresql -->" in markdown.stdout
    assert "Run " in markdown.stdout and "a smoke run" in markdown.stdout
    listed = markdown.stdout.count("**met**") + markdown.stdout.count("**missed**")
    met_unlisted = int(re.search(r"Met in every run and not listed: (\d+) more", markdown.stdout)[1])
    assert listed + met_unlisted == len(targets)
    missed = [t for t in targets if t["target"] == "work above the floor ≤ peer" and not t["met"]]
    budget = markdown.stdout.partition("Where the time of each missed per-call target goes")[2]
    budget_rows = [
        line for line in budget.partition("\n\nThe floor's own CPU")[0].splitlines() if line.startswith("| ")
    ]
    assert len(budget_rows) == (len(missed) + 1 if missed else 0)  # a header, then one row per miss
