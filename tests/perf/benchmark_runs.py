"""Running ``python -m benchmarks`` as a contributor does, in a fresh process (the tests never
import the benchmarks)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def benchmarks(*args: str | Path, database_url: str = "") -> subprocess.CompletedProcess:
    """The suite with ``args``, on ``database_url`` when given; without it, the suites that need
    PostgreSQL start a server of their own (the tests' DATABASE_URL is not passed on)."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    if database_url:
        env["DATABASE_URL"] = database_url
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
