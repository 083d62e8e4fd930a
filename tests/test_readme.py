"""The README's promises that a new user relies on."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(python3\.11 [^\n]+)\n```", setup)


def test_readme_shows_exactly_two_setup_commands():
    commands = _readme_commands()
    assert len(commands) == 2, commands
    assert "quickstart" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_word_for_word():
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"TEST_COMMAND='{_readme_commands()[1]}'" in ci


def _latest_testloop_run() -> dict:
    kept = sorted((ROOT / "benchmarks" / "results").glob("testloop-sqlite-*.json"))
    assert kept, "no kept run of python -m benchmarks testloop: the README's figures come from one"
    return json.loads(kept[-1].read_text())


def _collected_quick_and_all() -> tuple[int, int]:
    """The quick loop's and the whole suite's test counts, from one collection."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", "-n", "0", "-m", "not slow"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = re.search(r"(\d+)/(\d+) tests collected", run.stdout)
    assert found, run.stdout[-2000:] + run.stderr[-2000:]
    return int(found[1]), int(found[2])


@pytest.mark.servers  # collects the suite in a fresh pytest
def test_the_readmes_test_counts_are_the_suites_within_a_tenth():
    """The README's figures come from the latest kept testloop run; when the suite has grown or
    shrunk by more than a tenth since, they are stale: rerun the suite and regenerate."""
    run = _latest_testloop_run()
    quick = run["quick_tests"]
    now_quick, now_all = _collected_quick_and_all()
    rerun = "python -m benchmarks testloop && python -m benchmarks summary --write README.md"
    assert abs(run["all_tests"] - now_all) <= now_all / 10, f"{run['all_tests']} kept, {now_all} now: {rerun}"
    assert abs(quick - now_quick) <= now_quick / 10, f"{quick} kept, {now_quick} now: {rerun}"
