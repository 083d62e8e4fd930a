"""``python -m benchmarks summary``: the median and spread (min-max) over every run kept in
benchmarks/results/, per suite and database, as docs/PERFORMANCE.md reports them. Reads JSON
only: no database, no Django."""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from benchmarks.report import RESULTS_DIR, table


def _spread(values: list[float], fmt: str = "{:.3f}") -> str:
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def _runs(results_dir: Path) -> dict[tuple[str, str], list[dict]]:
    runs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for path in sorted(results_dir.glob("*.json")):
        payload = json.loads(path.read_text())
        vendor = "postgresql" if payload["machine"]["database"].startswith("PostgreSQL") else "sqlite"
        runs[(payload["benchmark"], vendor)].append(payload)
    return runs


def _scaling(vendor: str, runs: list[dict]) -> None:
    sizes = runs[0]["sizes"]
    rows = []
    for i, op in enumerate(runs[0]["operations"]):
        medians = [[run["operations"][i]["sizes"][str(s)]["median_ms"] for run in runs] for s in sizes]
        p99s = [run["operations"][i]["sizes"][str(sizes[-1])]["p99_ms"] for run in runs]
        ratios = [run["operations"][i]["ratio"] for run in runs]
        rows.append([op["operation"], *[_spread(m) for m in medians], _spread(p99s), _spread(ratios, "{:.2f}")])
    print(f"scaling on {vendor}, {len(runs)} runs: median ms of the runs' medians [min-max]")
    print(table(["operation", *[f"{s:,}" for s in sizes], f"p99 @{sizes[-1]:,}", "ratio"], rows))


def _erasure(vendor: str, runs: list[dict]) -> None:
    seconds = [run["subjects"]["large"]["seconds"] for run in runs]
    statements = sorted(
        {(run["subjects"]["small"]["statements"], run["subjects"]["large"]["statements"]) for run in runs}
    )
    print(
        f"erasure on {vendor}, {len(runs)} runs: 100,000 rows in {_spread(seconds, '{:.2f}')} s; statements (1,000 / 100,000 rows): {statements}"
    )


def _admin(vendor: str, runs: list[dict]) -> None:
    rows = []
    for i, page in enumerate(runs[0]["pages"]):
        rows.append(
            [
                page["page"],
                page["large"]["queries"],
                _spread([run["pages"][i]["small"]["median_ms"] for run in runs], "{:.1f}"),
                _spread([run["pages"][i]["large"]["median_ms"] for run in runs], "{:.1f}"),
            ]
        )
    small, large = runs[0]["messages"]
    print(f"admin on {vendor}, {len(runs)} runs: median render ms [min-max]")
    print(table(["page", "queries", f"@{small:,} messages", f"@{large:,} messages"], rows))


def _http(vendor: str, runs: list[dict]) -> None:
    by_config = defaultdict(list)
    for run in runs:
        by_config[(run.get("threads"), run.get("conn_health_checks"))].append(run)
    for (threads, checks), group in by_config.items():
        print(f"http, {len(group)} runs, threads={threads}, health checks={checks}:")
        for name in ("hello", "baseline", "append", "mixed"):
            having = [run for run in group if name in run["peaks"]]  # runs before the hello target lack it
            if not having:
                continue
            peaks = [run["peaks"][name]["rps"] for run in having]
            stmts = [next(p["statements_per_request"] for p in run["points"] if p["target"] == name) for run in having]
            print(f"  {name:8s} peak {_spread(peaks, '{:.0f}')} req/s, {_spread(stmts, '{:.2f}')} statements/request")
        ratio = [run["targets"]["append_over_baseline"]["value"] for run in group]
        print(f"  append / baseline {_spread(ratio, '{:.2f}')}")
        for name in ("append", "mixed"):
            p99 = [run["targets"]["p99_at_half_peak_ms"][name]["value"] for run in group]
            print(f"  {name} p99 at half peak {_spread(p99, '{:.1f}')} ms")


def _replicas(vendor: str, runs: list[dict]) -> None:
    print(f"replicas, {len(runs)} runs: median req/s [min-max]; primary CPU ms per request")
    rows = []
    for key in runs[0]["summary"]:
        rps = [run["summary"][key]["rps"] for run in runs]
        primary_ms = [run["summary"][key]["cpu_ms_per_request"]["primary"] for run in runs]
        rows.append([key, _spread(rps, "{:.0f}"), _spread(primary_ms)])
    print(table(["workload/deployment", "req/s", "primary CPU ms/req"], rows))
    for name in runs[0]["ratios"]:
        print(f"  {name} {_spread([run['ratios'][name] for run in runs], '{:.2f}')}")


def _retention(vendor: str, runs: list[dict]) -> None:
    for sessions in sorted({run["sessions"] for run in runs}):
        group = [run for run in runs if run["sessions"] == sessions]
        rate = _spread([run["sweep"]["rows_per_second"] for run in group], "{:.0f}")
        p99 = _spread([run["appends"]["p99_ms"] for run in group if run["appends"]["p99_ms"] is not None], "{:.1f}")
        errors = sum(run["appends"]["errors"] for run in group)
        print(
            f"retention on {vendor}, {len(group)} runs at {sessions:,} sessions: {rate} rows/s, append p99 {p99} ms, "
            f"{errors} errors"
        )


def main(results_dir: Path = RESULTS_DIR) -> int:
    """Print every kept suite's summary; 1 (and say so) when no run is kept yet."""
    show = {
        "scaling": _scaling,
        "erasure": _erasure,
        "admin": _admin,
        "http": _http,
        "replicas": _replicas,
        "retention": _retention,
    }
    runs_by_suite = _runs(results_dir)
    if not runs_by_suite:
        print(
            f"No benchmark results in {results_dir}: run a suite first (python -m benchmarks --help).", file=sys.stderr
        )
        return 1
    for (suite, vendor), runs in sorted(runs_by_suite.items()):
        if suite not in show:
            print(f"{suite} on {vendor}: {len(runs)} runs kept (no summary table for this suite; see its JSON files)")
            continue
        show[suite](vendor, runs)
        print()
    return 0
