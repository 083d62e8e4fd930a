"""docs/PERFORMANCE.md's tables, and the README's figures of the test suite, are what ``python -m
benchmarks summary --markdown`` makes of the runs kept in benchmarks/results/: edit a figure by hand,
or keep a run without regenerating the docs, and this fails."""

import ast
import io
import json
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "PERFORMANCE.md"
GENERATED_DOCS = (DOC, ROOT / "README.md")  # every document with generated regions
OPENING = re.compile(r"<!-- benchmarks:summary [\w-]+ \w+ -->")


def summary(*args: str | Path) -> subprocess.CompletedProcess:
    """``python -m benchmarks summary ARGS``, as a contributor runs it (the tests never import the
    benchmarks)."""
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", "summary", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("doc", GENERATED_DOCS, ids=lambda doc: doc.name)
def test_every_generated_table_in_the_docs_is_what_the_kept_runs_give(tmp_path, doc):
    regenerated = tmp_path / doc.name
    shutil.copy(doc, regenerated)
    run = summary("--write", regenerated)
    assert run.returncode == 0, run.stderr
    assert OPENING.search(doc.read_text()), f"{doc.name} has no generated region"
    rerun = f"python -m benchmarks summary --write {doc.relative_to(ROOT)}"
    assert regenerated.read_text() == doc.read_text(), f"tables differ from the kept runs: {rerun}"


def test_every_suite_with_kept_runs_has_its_table_in_a_doc():
    run = summary("--markdown")
    assert run.returncode == 0, run.stderr
    shown = {region for doc in GENERATED_DOCS for region in OPENING.findall(doc.read_text())}
    missing = sorted(set(OPENING.findall(run.stdout)) - shown)
    assert not missing, f"kept runs of {missing} have no region in docs/PERFORMANCE.md or the README"


def _doc(body: str) -> str:
    region = f"<!-- benchmarks:summary erasure postgresql -->\n{body}<!-- /benchmarks:summary -->"
    return f"# Doc\n\nProse 1.5 ms.\n\n{region}\n\nMore prose.\n"


def test_write_rewrites_the_regions_and_nothing_else(tmp_path):
    doc = tmp_path / "PERFORMANCE.md"
    doc.write_text(_doc("\n| a hand-copied table |\n\n"))
    results = tmp_path / "results"
    results.mkdir()
    for path in sorted((ROOT / "benchmarks" / "results").glob("erasure-postgresql-*.json")):
        shutil.copy(path, results)

    assert summary("--results", results, "--write", doc).returncode == 0

    markdown = summary("--results", results, "--markdown").stdout
    region = re.search(r"<!-- benchmarks:summary erasure postgresql -->.*?<!-- /benchmarks:summary -->", markdown, re.S)
    assert doc.read_text() == f"# Doc\n\nProse 1.5 ms.\n\n{region[0]}\n\nMore prose.\n"
    assert "| 100,000 rows | 100,000 |" in doc.read_text()


def test_write_refuses_a_region_without_kept_runs(tmp_path):
    doc = tmp_path / "PERFORMANCE.md"
    doc.write_text(_doc("\n| a hand-copied table |\n\n"))
    results = tmp_path / "results"
    results.mkdir()
    run = json.loads(next((ROOT / "benchmarks" / "results").glob("erasure-postgresql-*.json")).read_text())
    run["machine"]["database"] = "SQLite 3.40.1"  # runs of the suite, but none on PostgreSQL
    (results / "erasure-sqlite-20260101T000000Z.json").write_text(json.dumps(run))

    run = summary("--results", results, "--write", doc)

    assert run.returncode == 1 and "no kept runs of erasure on postgresql" in run.stderr
    assert doc.read_text() == _doc("\n| a hand-copied table |\n\n")


MEASURED = re.compile(
    r"\b\d[\d.,]*\s?(ms|µs)\b|\breq/s\b"
    r"|\b(\d[\d.,]*|two|three|four|five|ten)\s?(×|x|times) (the|as|faster|slower|more|less)\b",
    re.IGNORECASE,
)


def _comments_and_docstrings(path: Path):
    source = path.read_text()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(
            node
        ):
            yield node.body[0].lineno, ast.get_docstring(node)


def test_the_code_carries_no_measured_figures():
    """Timings, rates and "N times the" comparisons go stale in docstrings and comments: they
    belong in docs/PERFORMANCE.md, next to the suite that measures them."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {MEASURED.search(text)[0]}"
        for package in ("agentstate", "sessions_app", "userdata_app", "backends")
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, text in _comments_and_docstrings(path)
        if MEASURED.search(text)
    ]
    assert not found, found


# A suite's name, with a variant after a hyphen (frameworks-proxy: ``frameworks --proxy``).
KEPT_RUN = re.compile(r"^(?P<suite>[a-z]+)(?P<variant>-[a-z]+)?-(?P<database>postgresql|sqlite)-\d{8}T\d{6}Z\.json$")


def kept_runs() -> dict[tuple[str, str], list[str]]:
    """The kept runs' files by (suite, database), oldest first (their names end with the time)."""
    runs: dict[tuple[str, str], list[str]] = {}
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        if match := KEPT_RUN.match(path.name):
            runs.setdefault((match["suite"] + (match["variant"] or ""), match["database"]), []).append(path.name)
    return runs


def test_every_kept_run_belongs_to_a_suite_that_still_runs():
    """A retired suite takes its kept runs with it (its decision and numbers go to
    docs/PERFORMANCE_HISTORY.md): the doc's tables guard only what ``python -m benchmarks`` can rerun."""
    usage = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    suites = set(re.search(r"\{([\w,]+)\}", usage)[1].split(","))
    orphans = sorted({suite for suite, _ in kept_runs()} - suites - {f"{suite}-proxy" for suite in suites})
    assert not orphans, f"kept runs of {orphans}, which python -m benchmarks no longer runs"


def test_the_doc_names_each_kept_suites_latest_run():
    text = DOC.read_text()
    listed = text[text.index("<!-- benchmarks:summary kept all -->") :]
    latest = {names[-1] for names in kept_runs().values()}
    assert latest and all(f"`{name}`" in listed for name in latest)


def test_the_at_a_glance_rows_link_to_sections_of_the_doc():
    text = DOC.read_text()
    anchors = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#{2,3} (.+)$", text, re.M)}
    links = set(re.findall(r"\]\(#([\w-]+)\)", text))
    assert links and not links - anchors, f"links to no heading: {sorted(links - anchors)}"
