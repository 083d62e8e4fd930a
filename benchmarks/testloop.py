"""python -m benchmarks testloop: how long the quick loop takes, as a contributor runs it after each
change (`pytest -m "not slow"` in a fresh process, on every core, on SQLite), how many tests it
runs and how many the whole suite holds, with the machine's load before and after. The README's
figures are generated from the kept runs (``summary --write README.md``)."""

from __future__ import annotations

import os
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUICK = ("-m", "not slow")
# The closing line's counts: "1234 passed, 5 skipped, 3 deselected in 95.12s (0:01:35)".
COUNT = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)")
# --durations' lines: "12.34s call     tests/x.py::test_y".
DURATION = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(\S.*)$", re.M)
SLOWEST = 30  # kept with the run: where the quick loop's time goes
# The short summary's lines: "FAILED tests/x.py::test_y - AssertionError: ...".
FAILURE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)


def _pytest(*args: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """pytest in a fresh process with none of the benchmark's or the caller's stores: the SQLite
    run a contributor gets from a checkout, with Python's default of keeping compiled bytecode (a
    machine-wide PYTHONDONTWRITEBYTECODE would have every worker compile its imports anew). Returns
    its wall seconds and the CPU seconds (user and system) it and its xdist workers used: on a shared
    machine the wall time swings with the neighbours' load, the CPU time much less."""
    stores = ("DATABASE_", "REDIS_URL", "DJANGO_", "AGENTSTATE_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(stores)}
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    return run, seconds, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def counts(output: str) -> dict[str, int]:
    closing = output.strip().splitlines()[-1] if output.strip() else ""
    return {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in COUNT.findall(closing)}


def run() -> dict[str, Any]:
    # "1972/2484 tests collected (512 deselected)": the quick loop's and the whole suite's counts.
    collected, _, _ = _pytest("--collect-only", "-q", "-p", "no:randomly", "-n", "0", *QUICK)
    sizes = re.search(r"(\d+)/(\d+) tests collected", collected.stdout)
    load_before = [round(x, 2) for x in os.getloadavg()]
    seed = random.SystemRandom().randrange(1, 2**31)  # kept, so that a failing order can be run again
    quick, seconds, cpu_seconds = _pytest(
        *QUICK, "-q", "-p", "no:cacheprovider", f"--durations={SLOWEST}", f"--randomly-seed={seed}"
    )
    return {
        "command": 'pytest -m "not slow"',
        "quick_tests": int(sizes[1]) if sizes else None,
        "all_tests": int(sizes[2]) if sizes else None,
        "quick": counts(quick.stdout),
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu_seconds, 1),
        "exit_code": quick.returncode,
        "seed": seed,
        "failures": FAILURE.findall(quick.stdout),
        "load_before": load_before,
        "slowest": [
            {"seconds": float(secs), "phase": phase, "test": test}
            for secs, phase, test in DURATION.findall(quick.stdout)
        ],
    }


def print_table(result: dict[str, Any]) -> None:
    quick = result["quick"]
    print(
        f"{result['command']}: {quick.get('passed', 0)} passed, {quick.get('failed', 0)} failed, "
        f"{quick.get('skipped', 0)} skipped in {result['seconds']} s, {result['cpu_seconds']} s of CPU "
        f"(exit {result['exit_code']}); "
        f"the whole suite holds {result['all_tests']} tests; 1-minute load {result['load_before'][0]} before"
    )
    for failure in result.get("failures", ()):
        print(f"failed: {failure} (--randomly-seed={result['seed']})")
