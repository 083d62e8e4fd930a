"""``python -m benchmarks summary [--markdown] [--write FILE]``: the median and spread (min–max)
over every run kept in benchmarks/results/, per suite and database. Reads JSON only: no database,
no Django.

docs/PERFORMANCE.md's tables are this command's Markdown: each sits between
``<!-- benchmarks:summary <suite> <database> -->`` and ``<!-- /benchmarks:summary -->``, and
``--write docs/PERFORMANCE.md`` rewrites them in place from the kept results (a test fails when
they differ). A suite gets a table by registering a function with ``@summary("<suite>")`` that
turns its runs into ``Table``s.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.report import RESULTS_DIR, table


@dataclass
class Table:
    """One summary: a line saying what was measured and over how many runs, the table, notes."""

    caption: str
    headers: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join([self.caption, table(self.headers, self.rows), *self.notes])

    def markdown(self) -> str:
        lines = [self.caption, "", "| " + " | ".join(self.headers) + " |", "|" + "---|" * len(self.headers)]
        lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in self.rows]
        if self.notes:
            lines += ["", *self.notes]
        return "\n".join(lines)


Summary = Callable[[str, list[dict]], list[Table]]
SUMMARIES: dict[str, Summary] = {}


def summary(suite: str) -> Callable[[Summary], Summary]:
    """Register the function that summarises ``suite``'s kept runs (one vendor at a time)."""

    def register(function: Summary) -> Summary:
        SUMMARIES[suite] = function
        return function

    return register


def _spread(values: list[float], fmt: str = "{:.3f}") -> str:
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}–{fmt.format(max(values))}]"


def _when(runs: list[dict]) -> str:
    """When the runs ended and how loaded the machine was then (their files' names and machine())."""
    stamps = sorted(run["_stamp"] for run in runs)
    first, last = stamps[0], stamps[-1]
    day = f"{first[:4]}-{first[4:6]}-{first[6:8]}"
    hours = f"{first[9:11]}:{first[11:13]}" + (f"–{last[9:11]}:{last[11:13]}" if last[:13] != first[:13] else "")
    if last[:8] != first[:8]:
        hours = f"{first[9:11]}:{first[11:13]} to {last[:4]}-{last[4:6]}-{last[6:8]} {last[9:11]}:{last[11:13]}"
    load = _spread([run["machine"]["load_average"][0] for run in runs], "{:.2f}")
    plural = "s" if len(runs) > 1 else ""
    return f"{len(runs)} run{plural} of {day} {hours} UTC, 1-minute load average {load} as each ended"


@summary("scaling")
def _scaling(vendor: str, runs: list[dict]) -> list[Table]:
    sizes = runs[0]["sizes"]
    rows = []
    for i, op in enumerate(runs[0]["operations"]):
        medians = [[run["operations"][i]["sizes"][str(s)]["median_ms"] for run in runs] for s in sizes]
        p99s = [run["operations"][i]["sizes"][str(sizes[-1])]["p99_ms"] for run in runs]
        ratios = [run["operations"][i]["ratio"] for run in runs]
        rows.append(
            [op["operation"], *[_spread(m) for m in medians], _spread(p99s, "{:.2f}"), _spread(ratios, "{:.2f}")]
        )
    return [
        Table(
            f"Scaling on {vendor}, {_when(runs)}: median ms of the runs' medians [min–max].",
            ["operation", *[f"{s:,}" for s in sizes], f"p99 @{sizes[-1]:,}", "ratio"],
            rows,
        )
    ]


@summary("erasure")
def _erasure(vendor: str, runs: list[dict]) -> list[Table]:
    rows = []
    for name, label in (("small", "1,000 rows"), ("large", "100,000 rows")):
        subjects = [run["subjects"][name] for run in runs]
        statements = sorted({subject["statements"] for subject in subjects})
        rows.append(
            [
                label,
                f"{subjects[0]['rows']:,}",
                "–".join(str(n) for n in statements),
                _spread([subject["seconds"] for subject in subjects]),
                str(max(subject["left"] for subject in subjects)),
            ]
        )
    kept = [(run["bystander"]["kept"], run["bystander"]["rows"]) for run in runs]
    slowest = ", ".join(
        f"`{s['sql'].split(' WHERE ')[0][:60]}` {s['ms']:.0f} ms" for s in runs[-1]["subjects"]["large"]["slowest"]
    )
    return [
        Table(
            f"Erasure on {vendor}, {_when(runs)}: seconds median [min–max].",
            ["subject", "rows", "statements", "seconds", "rows left"],
            rows,
            [
                f"Bystander: {min(k for k, _ in kept):,} of {kept[0][1]:,} rows kept in every run. "
                f"Slowest statements at 100,000 rows (last run): {slowest}."
            ],
        )
    ]


@summary("admin")
def _admin(vendor: str, runs: list[dict]) -> list[Table]:
    rows = []
    for i, page in enumerate(runs[0]["pages"]):
        rows.append(
            [
                page["page"],
                str(page["large"]["queries"]),
                _spread([run["pages"][i]["small"]["median_ms"] for run in runs], "{:.1f}"),
                _spread([run["pages"][i]["large"]["median_ms"] for run in runs], "{:.1f}"),
            ]
        )
    small, large = runs[0]["messages"]
    return [
        Table(
            f"Admin on {vendor}, {_when(runs)}: median render ms [min–max].",
            ["page", "queries", f"@{small:,} messages", f"@{large:,} messages"],
            rows,
        )
    ]


@summary("http")
def _http(vendor: str, runs: list[dict]) -> list[Table]:
    by_config = defaultdict(list)
    for run in runs:
        by_config[(run.get("threads"), run.get("conn_health_checks"))].append(run)
    tables = []
    for (threads, checks), group in by_config.items():
        rows = []
        for name in ("hello", "append", "mixed"):  # runs before 2026-11-26 also swept a naive append
            peaks = [run["peaks"][name]["rps"] for run in group]
            stmts = [next(p["statements_per_request"] for p in run["points"] if p["target"] == name) for run in group]
            p99 = (
                [run["targets"]["p99_at_half_peak_ms"][name]["value"] for run in group]
                if name in ("append", "mixed")
                else []
            )
            rows.append(
                [name, _spread(peaks, "{:,.0f}"), _spread(stmts, "{:.2f}"), _spread(p99, "{:.1f}") if p99 else "—"]
            )
        ratio = [run["peaks"]["append"]["rps"] / run["peaks"]["hello"]["rps"] for run in group]
        tables.append(
            Table(
                f"HTTP on {vendor}, threads={threads}, health checks={checks}, {_when(group)}: median [min–max].",
                ["target", "peak req/s", "statements / request", "p99 ms at half peak"],
                rows,
                [f"append / bare view (hello) peak: {_spread(ratio, '{:.2f}')}"],
            )
        )
    return tables


@summary("replicas")
def _replicas(vendor: str, runs: list[dict]) -> list[Table]:
    rows = []
    for key in runs[0]["summary"]:
        rps = [run["summary"][key]["rps"] for run in runs]
        primary_ms = [run["summary"][key]["cpu_ms_per_request"]["primary"] for run in runs]
        rows.append([key, _spread(rps, "{:,.0f}"), _spread(primary_ms)])
    return [
        Table(
            f"Replicas, {_when(runs)}: median req/s [min–max]; primary CPU ms per request.",
            ["workload/deployment", "req/s", "primary CPU ms/req"],
            rows,
            [f"{name}: {_spread([run['ratios'][name] for run in runs], '{:.2f}')}" for name in runs[0]["ratios"]],
        )
    ]


@summary("retention")
def _retention(vendor: str, runs: list[dict]) -> list[Table]:
    rows = []
    for sessions in sorted({run["sessions"] for run in runs}):
        group = [run for run in runs if run["sessions"] == sessions]
        p99 = [run["appends"]["p99_ms"] for run in group if run["appends"]["p99_ms"] is not None]
        rows.append(
            [
                f"{sessions:,}",
                str(len(group)),
                _spread([run["sweep"]["rows_per_second"] for run in group], "{:,.0f}"),
                _spread(p99, "{:.1f}") if p99 else "—",
                str(sum(run["appends"]["errors"] for run in group)),
            ]
        )
    return [
        Table(
            f"Retention on {vendor}, {_when(runs)}: median [min–max].",
            ["ended sessions", "runs", "sweep rows/s", "append p99 ms", "append errors"],
            rows,
        )
    ]


@summary("edits")
def _edits(vendor: str, runs: list[dict]) -> list[Table]:
    rows = []
    for i, edit in enumerate(runs[0]["edits"]):
        seconds = [run["edits"][i]["seconds"] for run in runs]
        statements = sorted({run["edits"][i]["statements"] for run in runs})
        rows.append(
            [
                edit["operation"],
                f"{edit['size']:,}",
                f"{edit['rounds']:,}",
                f"{edit['outcome']:,}",
                _spread(seconds),
                "–".join(str(n) for n in statements),
                "yes" if all(run["edits"][i]["meets_target"] for run in runs) else "no",
            ]
        )
    target = runs[0]["target_seconds"]
    return [
        Table(
            f"History edits on {vendor}, {_when(runs)}: seconds median [min–max].",
            [
                "edit",
                "messages",
                "rounds",
                "messages copied/removed",
                "seconds",
                "statements",
                f"≤ {target} s in every run",
            ],
            rows,
        )
    ]


@summary("search")
def _search(vendor: str, runs: list[dict]) -> list[Table]:
    rows = []
    for i, search in enumerate(runs[0]["searches"]):
        p99 = [run["searches"][i]["p99_ms"] for run in runs]
        rows.append(
            [
                search["query"],
                f"{search['messages']:,}",
                str(search["results"]),
                _spread([run["searches"][i]["median_ms"] for run in runs], "{:.1f}"),
                _spread(p99, "{:.1f}"),
                "yes" if all(p <= runs[0]["target_p99_ms"] for p in p99) else "no",
            ]
        )
    measured = [run for run in runs if run["append"]]  # a run on a kept database measures none
    appends = [
        [
            name,
            _spread([run["append"][name]["median_ms"] for run in measured]),
            _spread([run["append"][name]["p99_ms"] for run in measured]),
        ]
        for name in (measured[0]["append"] if measured else ())
    ]
    target = runs[0]["target_p99_ms"]
    tables = [
        Table(
            f"Message search on {vendor}, {_when(runs)}: ms median [min–max], top 20 by rank.",
            ["query", "messages", "results", "median ms", "p99 ms", f"p99 < {target:g} ms in every run"],
            rows,
        )
    ]
    if measured:
        tables.append(
            Table(
                f"Single-message appends beside a history of {measured[0].get('append_messages', 100_000):,} "
                f"messages, in blocks with and without the index, {_when(measured)}: ms.",
                ["append", "median ms", "p99 ms"],
                appends,
            )
        )
    return tables


@summary("memory")
def _memory(vendor: str, runs: list[dict]) -> list[Table]:
    def across(column: dict, field: str) -> list[float]:
        """The column's figure in each run that measured it (runs before ADK's memory lack those)."""
        key = (column["store"], column["operation"])
        return [c[field] for run in runs for c in run["columns"] if (c["store"], c["operation"]) == key]

    latest = runs[-1]
    rows = [
        [
            column["operation"],
            column["store"],
            str(column["results"]),
            _spread(across(column, "median_ms"), "{:.2f}"),
            _spread(across(column, "p99_ms"), "{:.2f}"),
        ]
        for column in latest["columns"]
    ]
    return [
        Table(
            f"LangGraph store and ADK memory calls on {vendor}, {_when(runs)}: {latest['items']:,} items "
            f"(ADK: events) of one user, {latest['reps']} reps per column interleaved, ms median [min–max].",
            ["operation", "store", "results", "median ms", "p99 ms"],
            rows,
        )
    ]


@summary("latency")
def _latency(vendor: str, runs: list[dict]) -> list[Table]:
    names = list(runs[0]["services"])
    operations = list(runs[0]["services"][names[0]])
    rows = []
    for op in operations:
        row = [op]
        for name in names:
            medians = [run["services"][name][op]["median_ms"] for run in runs if op in run["services"][name]]
            p99s = [run["services"][name][op]["p99_ms"] for run in runs if op in run["services"][name]]
            row.append(f"{_spread(medians, '{:.1f}')} / {_spread(p99s, '{:.1f}')}" if medians else "–")
        rows.append(row)
    probes = [
        [name, _spread([run["probes"][name]["median_ms"] for run in runs], "{:.2f}")] for name in runs[0]["probes"]
    ]
    return [
        Table(
            f"Latency of one caller on {vendor}, {_when(runs)}: median / p99 ms, median [min–max] of the runs.",
            ["operation", *names],
            rows,
        ),
        Table("Requests that do nothing, over HTTP, same runs: median ms.", ["request", "median ms"], probes),
    ]


@summary("testloop")
def _testloop(vendor: str, runs: list[dict]) -> list[Table]:
    """The quick loop's time and size, and the whole suite's, per kept run (the README's figures)."""
    rows = [
        [
            _stamp_time(run["_stamp"]),
            f"{run['quick_tests']:,}",
            f"{run['quick'].get('passed', 0):,}",
            f"{run['quick'].get('skipped', 0):,}",
            f"{run['quick'].get('failed', 0):,}",
            f"{run['seconds']:.0f} s",
            f"{run['load_before'][0]:.1f} / {run['machine']['load_average'][0]:.1f}",
            f"{run['all_tests']:,}",
            f"{run['machine']['nproc']} × {run['machine']['cpu']}",
        ]
        for run in runs
    ]
    return [
        Table(
            f"The quick loop (`{runs[-1]['command']}`) on {vendor}, each kept run (`python -m benchmarks "
            "testloop`; load: the 1-minute load average of the cores the run shared).",
            ["UTC", "tests", "passed", "skipped", "failed", "time", "load before / after", "whole suite", "machine"],
            rows,
        )
    ]


FRAMEWORKS = ("Google ADK", "LangGraph", "OpenAI Agents SDK")
ROLES = ("agentstate", "peer", "beside")


def _size(size: int | None) -> str:
    return "" if size is None else f"{size:,}"


def _verdict(met: list[bool]) -> str:
    if all(met):
        return "**met**"
    return "**missed**" if not any(met) else f"met in {sum(met)} of {len(met)} runs"


@summary("frameworks")
def _frameworks(vendor: str, runs: list[dict]) -> list[Table]:
    """Per framework: each call's median / p99 on agentstate, the framework's own database store
    (the peer) and its in-process store (beside), agentstate's requests and its work above the
    floor; then every target of the runs with its verdict."""
    floors = [run["floor_ms"] for run in runs]
    tables = []
    for framework in FRAMEWORKS:
        keys = [(c["operation"], c["size"]) for c in runs[0]["columns"] if c["framework"] == framework]
        keys = list(dict.fromkeys(keys))
        stores = {c["role"]: c["store"] for c in runs[0]["columns"] if c["framework"] == framework}
        roles = [role for role in ROLES if role in stores]
        rows = []
        for operation, size in keys:
            points = {
                role: [
                    next(
                        c
                        for c in run["columns"]
                        if (c["framework"], c["operation"], c["size"], c["role"]) == (framework, operation, size, role)
                    )
                    for run in runs
                ]
                for role in roles
            }
            cells = [
                f"{_spread([p['median_ms'] for p in points[role]], '{:.1f}')} / "
                f"{_spread([p['p99_ms'] for p in points[role]], '{:.1f}')}"
                for role in roles
            ]
            requests = sorted({p["requests"] for p in points["agentstate"]})
            above = [
                p["median_ms"] - p["requests"] * run["floor_ms"]
                for p, run in zip(points["agentstate"], runs, strict=True)
            ]
            rows.append(
                [
                    operation,
                    _size(size),
                    *cells,
                    "–".join(f"{r:g}" for r in requests),
                    _spread(above, "{:.1f}"),
                    f"{_spread([p['caller_cpu_ms'] for p in points['agentstate']], '{:.1f}')} / "
                    f"{_spread([p['server_cpu_ms'] for p in points['agentstate']], '{:.1f}')}",
                    _spread([p["caller_cpu_ms"] for p in points["peer"]], "{:.1f}"),
                ]
            )
        tables.append(
            Table(
                f"{framework} on {vendor}, {_when(runs)}: median / p99 ms, median [min–max] of the runs.",
                [
                    "call",
                    "size",
                    *[f"{role}: {stores[role]}" for role in roles],
                    "requests",
                    "agentstate - requests × floor",
                    "agentstate CPU: caller / server",
                    "peer CPU: caller",
                ],
                rows,
            )
        )
    rows, met_per_call = _target_rows(runs)
    notes = [
        f"Met in every run and not listed: {met_per_call} more per-call targets ({WORK_ABOVE}).",
        f"Floor (`GET /livez` on a kept-alive connection, every run): {_spread(floors, '{:.2f}')} ms. "
        "CPU: the caller's process (framework, adapter or driver, httpx) and gunicorn's worker, median ms "
        "per call; the rest of a call is PostgreSQL, the loopback and waiting for a core.",
    ]
    adk_caches = [run["client_caches"]["Google ADK"] for run in runs if "Google ADK" in run.get("client_caches", {})]
    if adk_caches:
        notes.append(
            "ADK's read cache (`cache_info()` at the end of each run; every read still asks the server): "
            + "; ".join(
                f"{c['hits']} hits, {c['misses']} misses, {c['sessions']} sessions, {c['bytes'] / 2**20:.1f} MiB"
                for c in adk_caches
            )
            + "."
        )
    sdk = "OpenAI Agents SDK"
    sdk_caches = [run["client_caches"][sdk] for run in runs if sdk in run.get("client_caches", {})]
    if sdk_caches:
        notes.append(
            "The SDK sessions' last whole read (`cache_info()` at the end of each run, summed over the "
            "session objects; every read still asks the server): "
            + "; ".join(
                f"{c['hits']} hits, {c['misses']} misses, {c['items']:,} items, {c['chars'] / 2**20:.1f} M characters"
                for c in sdk_caches
            )
            + "."
        )
    notes += ["", *_run_notes(runs)]
    tables.append(
        Table(
            f"Targets of the framework backends on {vendor} missed in some run, and the outright ones, "
            "computed from each run: value median [min–max].",
            TARGET_COLUMNS,
            rows,
            notes,
        )
    )
    budget = _miss_budget(runs)
    if budget is not None:
        tables.append(budget)
    return tables


FLOOR = ("HTTP", "GET /livez (the floor)")
WORK_ABOVE = "work above the floor ≤ peer"
TARGET_COLUMNS = ["framework", "call", "size", "target", "value", "limit", "verdict"]


def _target_rows(runs: list[dict]) -> tuple[list[list[str]], int]:
    """Each target missed in some run and each outright one, with its verdict over the runs; and how
    many per-call targets every run met (not listed: the framework's table has their figures)."""
    rows, met_per_call = [], 0
    for i, target in enumerate(runs[0]["targets"]):
        found = [run["targets"][i] for run in runs]
        if target["target"] == WORK_ABOVE and all(t["met"] for t in found):
            met_per_call += 1
            continue
        rows.append(
            [
                target["framework"],
                target["operation"],
                _size(target["size"]),
                target["target"],
                _spread([t["value"] for t in found], "{:.2f}"),
                _spread([t["limit"] for t in found], "{:.2f}"),
                _verdict([t["met"] for t in found]),
            ]
        )
    return rows, met_per_call


def _run_notes(runs: list[dict]) -> list[str]:
    return [f"- Run {_stamp_time(run['_stamp'])}: {run['note']}" for run in runs if run.get("note")]


@summary("frameworks-proxy")
def _frameworks_proxy(vendor: str, runs: list[dict]) -> list[Table]:
    """The framework suite through docs/SCALING.md's HAProxy, one row per framework: how many of its
    per-call targets every run met, each one some run missed (value / limit, medians of the runs),
    and the outright ones. The floor (a bare ``GET /livez``) is taken through the proxy too."""
    rows, floors = [], [run["floor_ms"] for run in runs]
    for framework in FRAMEWORKS:
        found = [
            [run["targets"][i] for run in runs]
            for i, target in enumerate(runs[0]["targets"])
            if target["framework"] == framework
        ]
        per_call = [each for each in found if each[0]["target"] == WORK_ABOVE]
        missed = [each for each in per_call if not all(t["met"] for t in each)]
        outright = [each for each in found if each[0]["target"] != WORK_ABOVE]
        rows.append(
            [
                framework,
                f"{len(per_call) - len(missed)} of {len(per_call)}",
                "; ".join(_brief(each, "{:.1f} / {:.1f}") for each in missed) or "none",
                "; ".join(_brief(each, "{:.2f} (limit {:.2f})") for each in outright) or "none",
            ]
        )
    return [
        Table(
            f"Through the documented proxy (HAProxy with TLS, docs/SCALING.md's recipe) on {vendor}, "
            f"{_when(runs)}: medians of the runs, ms above the floor / the peer's for per-call targets.",
            ["framework", "per-call targets met in every run", "missed in some run", "outright"],
            rows,
            [
                f"Floor through the proxy (`GET /livez`, kept-alive): {_spread(floors, '{:.2f}')} ms.",
                *_run_notes(runs),
            ],
        )
    ]


def _brief(found: list[dict], fmt: str) -> str:
    """One target over the runs: its call and size, median value and limit, and its verdict."""
    first = found[0]
    size = f" @{_size(first['size'])}" if first["size"] is not None else ""
    value = fmt.format(statistics.median(t["value"] for t in found), statistics.median(t["limit"] for t in found))
    return f"{first['operation']}{size} {value}, {_verdict([t['met'] for t in found])}"


def _miss_budget(runs: list[dict]) -> Table | None:
    """Where the time of each per-call target missed in some run goes: agentstate's work above the
    floor split into the CPU its caller and gunicorn's worker spent beyond what the same number of
    bare requests cost them (the floor's CPU, measured in the same run), and the rest (PostgreSQL,
    the loopback, waiting for a core); beside it the peer's whole time and its caller's CPU."""
    missed = [
        i
        for i, target in enumerate(runs[0]["targets"])
        if target["target"] == WORK_ABOVE and not all(run["targets"][i]["met"] for run in runs)
    ]
    if not missed:
        return None
    rows = []
    for i in missed:
        target = runs[0]["targets"][i]
        key = (target["framework"], target["operation"], target["size"])
        caller, server, rest, peer_cpu = [], [], [], []
        for run in runs:
            by_key = {(c["framework"], c["operation"], c["size"], c["role"]): c for c in run["columns"]}
            floor, ours, peer = (
                by_key[(*FLOOR, None, "agentstate")],
                by_key[(*key, "agentstate")],
                by_key[(*key, "peer")],
            )
            requests = ours["requests"] or 0
            caller.append(ours["caller_cpu_ms"] - requests * floor["caller_cpu_ms"])
            server.append(ours["server_cpu_ms"] - requests * floor["server_cpu_ms"])
            rest.append(run["targets"][i]["value"] - caller[-1] - server[-1])
            peer_cpu.append(peer["caller_cpu_ms"])
        rows.append(
            [
                target["framework"],
                target["operation"],
                _size(target["size"]),
                _spread([run["targets"][i]["value"] for run in runs], "{:.1f}"),
                _spread(caller, "{:.1f}"),
                _spread(server, "{:.1f}"),
                _spread(rest, "{:.1f}"),
                _spread([run["targets"][i]["limit"] for run in runs], "{:.1f}"),
                _spread(peer_cpu, "{:.1f}"),
            ]
        )
    floor_cpu = [next(c for c in run["columns"] if (c["framework"], c["operation"]) == FLOOR) for run in runs]
    return Table(
        "Where the time of each missed per-call target goes, ms per call, median [min–max] of the runs: "
        "agentstate's work above the floor = the CPU its caller and its server spent beyond the floor's "
        "(times the call's requests) + the rest (PostgreSQL, the loopback, waiting for a core).",
        [
            "framework",
            "call",
            "size",
            "work above the floor",
            "caller CPU above the floor's",
            "server CPU above the floor's",
            "the rest",
            "peer: whole call",
            "peer: caller CPU",
        ],
        rows,
        [
            f"The floor's own CPU per request: caller {_spread([c['caller_cpu_ms'] for c in floor_cpu], '{:.2f}')}, "
            f"server {_spread([c['server_cpu_ms'] for c in floor_cpu], '{:.2f}')} ms."
        ],
    )


def kept_runs(results_dir: Path = RESULTS_DIR) -> dict[tuple[str, str], list[dict]]:
    """Every kept run by (suite, database), in the order they were taken."""
    runs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for path in sorted(results_dir.glob("*.json")):
        payload = json.loads(path.read_text())
        payload["_stamp"] = path.stem.rsplit("-", 1)[1]  # <suite>-<vendor>-<UTC time>.json
        payload["_file"] = path.name
        vendor = "postgresql" if payload["machine"]["database"].startswith("PostgreSQL") else "sqlite"
        runs[(payload["benchmark"], vendor)].append(payload)
    return dict(runs)


def _machine(run: dict) -> str:
    machine = run["machine"]
    return (
        f"{machine['nproc']} × {machine['cpu']}, {machine['memory_gb']:g} GB, {machine['database'].split(' (')[0]}, "
        f"Python {machine['python']}, Django {machine['django']}"
    )


def _stamp_time(stamp: str) -> str:
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]}"


def kept_table(runs_by_suite: dict[tuple[str, str], list[dict]]) -> Table:
    """Which runs every figure of the doc comes from: per suite and database, how many are kept,
    the latest one's file and time, and the machine it ran on."""
    rows = [
        [
            suite,
            vendor,
            str(len(runs)),
            f"`{runs[-1]['_file']}`",
            _stamp_time(runs[-1]["_stamp"]),
            _machine(runs[-1]),
        ]
        for (suite, vendor), runs in sorted(runs_by_suite.items())
    ]
    return Table(
        "Runs kept in `benchmarks/results/`, per suite and database (each table below summarises them).",
        ["suite", "database", "runs", "latest run", "UTC", "machine"],
        rows,
    )


KEPT = ("kept", "all")  # the region listing the kept runs themselves


def markdown_sections(results_dir: Path = RESULTS_DIR) -> dict[tuple[str, str], str]:
    """The Markdown of every (suite, database) with kept runs and a registered summary, and of the
    list of kept runs (``KEPT``)."""
    runs_by_suite = kept_runs(results_dir)
    sections = {
        key: "\n\n".join(t.markdown() for t in SUMMARIES[key[0]](key[1], runs))
        for key, runs in sorted(runs_by_suite.items())
        if key[0] in SUMMARIES
    }
    if runs_by_suite:
        sections[KEPT] = kept_table(runs_by_suite).markdown()
    return sections


REGION = re.compile(
    r"(?P<open><!-- benchmarks:summary (?P<suite>[\w-]+) (?P<vendor>\w+) -->\n)"
    r"(?P<body>.*?)(?P<close><!-- /benchmarks:summary -->)",
    re.DOTALL,
)


def doc_regions(text: str) -> dict[tuple[str, str], str]:
    """What each generated region of a document holds now."""
    return {(m["suite"], m["vendor"]): m["body"] for m in REGION.finditer(text)}


def region_body(section: str) -> str:
    return f"\n{section}\n\n"


def doc_rewrite(text: str, sections: dict[tuple[str, str], str]) -> str:
    """``text`` with every generated region replaced by its section; KeyError names a region that
    has no kept runs to generate it from."""
    return REGION.sub(lambda m: m["open"] + region_body(sections[(m["suite"], m["vendor"])]) + m["close"], text)


def main(results_dir: Path = RESULTS_DIR, *, markdown: bool = False, write: Path | None = None) -> int:
    """Print every kept suite's summary (as Markdown with ``markdown``), or rewrite the generated
    regions of ``write``; 1 (and say so) when no run is kept yet or a region has none."""
    runs_by_suite = kept_runs(results_dir)
    if not runs_by_suite:
        print(
            f"No benchmark results in {results_dir}: run a suite first (python -m benchmarks --help).", file=sys.stderr
        )
        return 1
    if write is not None:
        text = write.read_text()
        try:
            write.write_text(doc_rewrite(text, markdown_sections(results_dir)))
        except KeyError as missing:
            print(
                f"{write}: no kept runs of {' on '.join(missing.args[0])} in {results_dir} for its region.",
                file=sys.stderr,
            )
            return 1
        print(f"{write}: {len(doc_regions(text))} generated regions rewritten")
        return 0
    if markdown:  # each region as the document holds it
        for (suite, vendor), section in markdown_sections(results_dir).items():
            print(f"<!-- benchmarks:summary {suite} {vendor} -->\n{region_body(section)}<!-- /benchmarks:summary -->\n")
        return 0
    for (suite, vendor), runs in sorted(runs_by_suite.items()):
        if suite not in SUMMARIES:
            print(f"{suite} on {vendor}: {len(runs)} runs kept (no summary table for this suite; see its JSON files)")
        else:
            print("\n\n".join(t.text() for t in SUMMARIES[suite](vendor, runs)))
        print()
    print(kept_table(runs_by_suite).text())
    return 0
