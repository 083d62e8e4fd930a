"""Statistics, the machine description, the printed table and the JSON results file."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# Every gunicorn the run started, as it was configured (benchmarks.http_load.gunicorn appends):
# written with the results, so a kept run says what it measured.
SERVERS: list[dict[str, Any]] = []


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted samples."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summarize_ms(samples_ns: list[int]) -> dict[str, float]:
    ms = [s / 1e6 for s in samples_ns]
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 4),
        "p99_ms": round(percentile(ms, 99), 4),
        "min_ms": round(min(ms), 4),
    }


def timed(fn: Callable[[], Any], n: int) -> dict[str, float]:
    """``fn`` called once to warm (connections, caches, imports), then ``n`` times, each timed."""
    fn()
    samples = []
    for _ in range(n):
        started = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - started)
    return summarize_ms(samples)


def machine() -> dict[str, Any]:
    """What the numbers were measured on: CPUs, memory, Python, Django and database versions."""
    import django
    from django.db import connection

    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    except (OSError, StopIteration):
        mem_kb = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW server_version")
            db_version = "PostgreSQL " + cursor.fetchone()[0]
        else:
            cursor.execute("SELECT sqlite_version()")
            db_version = "SQLite " + cursor.fetchone()[0]
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "django": django.get_version(),
        "database": db_version,
    }


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_results(name: str, payload: dict[str, Any], directory: Path | None = None) -> Path:
    """Write ``payload`` to <directory>/<name>-<vendor>-<UTC time>.json (benchmarks/results/ unless
    another directory is given) and return the path."""
    from django.db import connection

    directory = directory or RESULTS_DIR
    directory.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = directory / f"{name}-{connection.vendor}-{stamp}.json"
    servers = {"servers": SERVERS} if SERVERS else {}
    path.write_text(json.dumps({"benchmark": name, "machine": machine(), **servers, **payload}, indent=2, default=str))
    return path


class StatementLog:
    """Every statement Django sends while active (``connection.execute_wrapper``): unlike
    ``CaptureQueriesContext`` it survives the request cycle's ``reset_queries``. BEGIN/COMMIT
    are not statements Django executes and are not counted."""

    def __init__(self):
        self.statements: list[tuple[str, float]] = []

    def __call__(self, execute, sql, params, many, context):
        import time as _time

        started = _time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.statements.append((sql, (_time.perf_counter() - started) * 1000))

    def __enter__(self):
        from django.db import connection

        self._wrapper = connection.execute_wrapper(self)
        self._wrapper.__enter__()
        return self

    def __exit__(self, *exc):
        return self._wrapper.__exit__(*exc)

    def __len__(self) -> int:
        return len(self.statements)

    def slowest(self, n: int = 3) -> list[dict]:
        return [{"ms": round(ms, 2), "sql": sql[:160]} for sql, ms in sorted(self.statements, key=lambda s: -s[1])[:n]]
