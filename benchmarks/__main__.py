"""python -m benchmarks
    {scaling,http,erasure,admin,edits,replicas,retention,latency,frameworks,search,memory,semantic,all,summary}
    [--quick] [--keep-db] [--reuse-db] [--workers N] [--threads N] [--no-profile] [--note TEXT]
    [--framework NAME] [--proxy] [--markdown] [--write FILE] [--results DIR]

scaling, erasure, admin and edits (fork and rewind at 100,000 messages) run on SQLite by default and
on PostgreSQL when DATABASE_URL is set; retention (a sweep of 10,000 ended sessions, 1,000,000
messages, while agents append; --sessions N for another scale) needs PostgreSQL (a dedicated
<name>_bench database is created and dropped). http always starts a private PostgreSQL server
(pg_stat_statements preloaded to count round trips) plus gunicorn and wrk. replicas adds a streaming
replica, PgBouncer and Redis beside such a server (docs/SCALING.md). latency times one caller per
operation: the client against gunicorn, the service layer and ADK's services in process (SQLite by
default, PostgreSQL when DATABASE_URL is set). frameworks drives Google ADK, LangGraph and the
OpenAI Agents SDK through their own interfaces against agentstate (gunicorn, one worker) and against
each framework's own store on the same PostgreSQL (DATABASE_URL's server, or a private one), their
SQLite stores beside, and computes issue 26's targets (--note keeps a line about the run with it;
--proxy puts HAProxy, set up as docs/SCALING.md's recipe does, in front of gunicorn, and keeps the
run as frameworks-proxy).
search times the message search at 10,000, 100,000 and 1,000,000 messages per tenant (--quick:
10,000), and what its index costs an append beside 100,000 (SQLite by default, PostgreSQL when
DATABASE_URL is set; --reuse-db searches the messages a kept run left in the benchmark database,
building them only when missing, and skips the append cost). memory times LangGraph's store calls
(put, search by filter and by query) through AgentStateStore (gunicorn, one worker) against
InMemoryStore and PostgresStore, and ADK's search_memory through AgentStateMemoryService against
InMemoryMemoryService and SqliteMemoryService, on the same data, on DATABASE_URL's PostgreSQL.
semantic times the memory search by vector (768 dimensions) over a person's 10,000 items and tenant
prefixes of 10,000 to 1,000,000 (--quick: 10,000; each scope's first search timed apart), and a put
with and without vectors (SQLite by default, PostgreSQL when DATABASE_URL is set).
testloop times the quick loop (pytest -m "not slow", SQLite) and counts the whole suite's tests for
the README.
Every gunicorn is the shipped one (gunicorn -c gunicorn.conf.py) changed only by GUNICORN_*
variables (the shell's, and --workers/--threads for http and replicas), and each run records them.
all runs each suite in its own process. Every suite prints a table and writes JSON to
benchmarks/results/; summary prints the median and spread of every run kept there (--markdown as
docs/PERFORMANCE.md shows them; --write docs/PERFORMANCE.md rewrites its generated tables). Suites
retired once their decision was made are listed, with the decision, in docs/PERFORMANCE_HISTORY.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_db import bench_database

SUITES = (
    "scaling",
    "http",
    "erasure",
    "admin",
    "edits",
    "replicas",
    "retention",
    "latency",
    "frameworks",
    "search",
    "memory",
    "semantic",
    "testloop",
)


# The suites that run in a benchmark database of their own: their module, and run()'s arguments.
IN_DATABASE: dict[str, tuple[str, Callable[[argparse.Namespace], dict[str, Any]]]] = {
    "scaling": ("scaling", lambda args: {"rounds": 3, "batch": 10} if args.quick else {}),
    "erasure": ("erasure", lambda args: {}),
    "edits": ("history_edits", lambda args: {}),
    "admin": ("admin_scale", lambda args: {"renders": 5 if args.quick else 15}),
    "latency": ("latency", lambda args: {"quick": args.quick}),
    "search": ("search", lambda args: {"reuse": args.reuse_db, **({"sizes": (10_000,)} if args.quick else {})}),
    "memory": ("memory", lambda args: {"quick": args.quick}),
    "semantic": ("semantic", lambda args: {"tenant_sizes": (10_000,)} if args.quick else {}),
    "testloop": ("testloop", lambda args: {}),
}


# The suites whose run() can measure on the data a kept database already holds (--reuse-db).
REUSABLE = ("search",)


def _in_database(suite: str, args: argparse.Namespace) -> None:
    """Run ``suite`` in a fresh benchmark database; its module is imported once Django is set up."""
    module_name, arguments = IN_DATABASE[suite]
    if args.reuse_db and suite not in REUSABLE:
        raise SystemExit(f"--reuse-db: only {', '.join(REUSABLE)} can measure on a kept database's data")
    with bench_database(keep=args.keep_db, reuse=args.reuse_db):
        from benchmarks import report

        module = importlib.import_module(f"benchmarks.{module_name}")
        result = module.run(**arguments(args))
        module.print_table(result)
        print(f"results: {report.write_results(suite, result, args.results)}")


def _retention(args) -> None:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("retention: set DATABASE_URL to a PostgreSQL server (the concurrent appends need row locks)")
    with bench_database(keep=args.keep_db):
        from benchmarks import report, retention

        result = retention.run(sessions=args.sessions or (1_000 if args.quick else 10_000))
        retention.print_table(result)
        print(f"results: {report.write_results('retention', result, args.results)}")


def _frameworks(args) -> None:
    """On DATABASE_URL's PostgreSQL server, or on a private one when DATABASE_URL names none."""
    with contextlib.ExitStack() as stack:
        if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
            from tools import pgcluster

            cluster = stack.enter_context(pgcluster.throwaway(prefix="agentstate-bench-pg-"))
            os.environ["DATABASE_URL"] = cluster.url("agentstate")
        with bench_database(keep=args.keep_db):
            from benchmarks import frameworks, report

            result = frameworks.run(quick=args.quick, note=args.note, only=args.framework, proxy=args.proxy)
            frameworks.print_table(result)
            # A complete run through the documented proxy is kept under its own name, beside the direct runs.
            suite = "frameworks-proxy" if args.proxy else "frameworks"
            print(f"results: {report.write_results(suite, result, args.results)}")


def _http(args) -> None:
    from benchmarks.topology import statement_counting_cluster

    with statement_counting_cluster() as cluster:
        os.environ["DATABASE_URL"] = cluster.url("agentstate")
        with bench_database(keep=False):
            from benchmarks import http_load, report

            result = http_load.run(
                cluster=cluster,
                quick=args.quick,
                settings=server_settings(args),
                profile=not args.no_profile,
            )
            http_load.print_table(result)
            print(f"results: {report.write_results('http', result, args.results)}")


def _replicas(args) -> None:
    from benchmarks.topology import pgbouncer, redis_server, statement_counting_cluster
    from tools import pgcluster

    with (
        statement_counting_cluster() as cluster,
        # The replica serves reads only: no statement counting there.
        pgcluster.throwaway_replica(cluster, settings={"shared_preload_libraries": ""}) as replica,
        pgbouncer(cluster) as bouncer,
        redis_server() as redis_url,
    ):
        os.environ["DATABASE_URL"] = cluster.url("agentstate")
        with bench_database(keep=False) as url:
            from benchmarks import replicas, report

            result = replicas.run(
                primary_url=url,
                admin_url=cluster.url(),
                primary_pid=cluster.pid,
                replica=replica,
                bouncer=bouncer,
                redis_url=redis_url,
                quick=args.quick,
                settings=server_settings(args),
            )
            replicas.print_table(result)
            print(f"results: {report.write_results('replicas', result, args.results)}")


def server_settings(args: argparse.Namespace) -> dict[str, str]:
    """--workers and --threads as the GUNICORN_* variables an operator would set."""
    given = {"GUNICORN_WORKERS": args.workers, "GUNICORN_THREADS": args.threads}
    return {name: str(value) for name, value in given.items() if value is not None}


def results_dir(args: argparse.Namespace) -> Path | None:
    """Where a suite writes its run: ``--results``, else benchmarks/results/ (None) for a complete
    run. A partial one (``--quick``, ``--framework``) goes to a scratch directory instead and is
    refused in benchmarks/results/, where the summary and docs/PERFORMANCE.md read complete runs."""
    flags = (("--quick", args.quick), ("--framework", args.framework))
    partial = [flag for flag, given in flags if given]
    if not partial:
        return args.results
    from benchmarks.report import RESULTS_DIR

    if args.results is not None and args.results.resolve() == RESULTS_DIR.resolve():
        raise SystemExit(
            f"a partial run ({' and '.join(partial)}) is never kept in benchmarks/results/: "
            "pass another --results DIR, or none for a scratch directory"
        )
    if args.results is not None:
        return args.results
    scratch = Path(tempfile.mkdtemp(prefix="agentstate-bench-partial-"))
    print(f"{' and '.join(partial)}: a partial run, written to {scratch} (benchmarks/results/ keeps complete runs)")
    return scratch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmarks of agentstate; docs/PERFORMANCE.md has the machine and the numbers.",
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "suite",
        nargs="?",
        default="scaling",
        choices=[*SUITES, "all", "summary"],
        help="which suite to run (default: scaling); 'all' runs every suite, each in its own process; "
        "'summary' prints the median and spread of the runs kept in benchmarks/results/",
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer samples, shorter points (a smoke run, not for reporting)"
    )
    parser.add_argument("--keep-db", action="store_true", help="scaling: leave the benchmark database in place")
    parser.add_argument(
        "--reuse-db",
        action="store_true",
        help="search (PostgreSQL): measure on the data a kept run left in the benchmark database "
        "(built when missing, kept after)",
    )
    parser.add_argument(
        "--workers", type=int, help="http, replicas: GUNICORN_WORKERS for the servers (default: gunicorn.conf.py's)"
    )
    parser.add_argument(
        "--threads", type=int, help="http, replicas: GUNICORN_THREADS for the servers (default: gunicorn.conf.py's)"
    )
    parser.add_argument(
        "--sessions", type=int, default=0, help="retention: ended sessions of 100 messages each (default 10,000)"
    )
    parser.add_argument(
        "--note", default="", help="frameworks: a note kept with the run (the machine's state, what code it ran)"
    )
    parser.add_argument(
        "--framework",
        choices=["adk", "langgraph", "sdk"],
        metavar="NAME",
        help="frameworks: measure one framework alone, adk, langgraph or sdk (a before/after comparison; a "
        "partial run, written to a scratch directory or --results, never to benchmarks/results/)",
    )
    parser.add_argument(
        "--proxy",
        action="store_true",
        help="frameworks: through HAProxy as docs/SCALING.md sets it up (kept as frameworks-proxy)",
    )
    parser.add_argument("--no-profile", action="store_true", help="http: skip the py-spy profile")
    parser.add_argument(
        "--markdown", action="store_true", help="summary: print Markdown tables, each in its docs/PERFORMANCE.md region"
    )
    parser.add_argument(
        "--write",
        metavar="FILE",
        type=Path,
        help="summary: rewrite FILE's generated regions (<!-- benchmarks:summary SUITE DATABASE -->) from kept runs",
    )
    parser.add_argument(
        "--results",
        metavar="DIR",
        type=Path,
        help="summary: read the kept runs from DIR; a suite: write its run there (default benchmarks/results/ for a "
        "complete run, a scratch directory for a partial one: --quick, --framework)",
    )
    args, _ = parser.parse_known_args(argv)
    # A terminated run still stops its servers and drops its database (the finally blocks run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.suite == "summary":
        from benchmarks import summary

        return summary.main(args.results or summary.RESULTS_DIR, markdown=args.markdown, write=args.write)
    if args.suite == "all":
        passed = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "all"]
        return max(subprocess.call([sys.executable, "-m", "benchmarks", suite, *passed]) for suite in SUITES)
    args.results = results_dir(args)
    if args.suite in IN_DATABASE:
        _in_database(args.suite, args)
    else:
        {"http": _http, "replicas": _replicas, "retention": _retention, "frameworks": _frameworks}[args.suite](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
