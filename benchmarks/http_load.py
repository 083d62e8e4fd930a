"""HTTP load: gunicorn serving the service on a private PostgreSQL, wrk in another process on
127.0.0.1, and in the same run a bare Django view (benchmarks.baseline ``hello/``).

Three targets: ``hello`` (a view that touches no database: the machine's ceiling for a Django
view), ``append`` (the service's message append, API key, validation and tenant checks included)
and ``mixed`` (agent traffic: append, save round, export latest, read recent). Each gets a
closed-loop sweep over connection counts up to saturation (its peak), then for the service paced
points at fractions of that peak (wrk's ``delay()``, exponential pauses) for the latency at a
known offered rate. The promise judged (docs/PERFORMANCE.md, "HTTP load"): the append's peak at
least TARGET_HELLO_RATIO of the bare view's, its p99 at half its peak under TARGET_P99_MS, no error.

Per point: requests/s, p50/p95/p99 latency, errors (socket errors and non-2xx answers), database
statements per request (pg_stat_statements on the private server: every statement the app sends,
BEGIN/COMMIT and connection health checks included, i.e. its round trips), and CPU used by the
app workers, PostgreSQL and wrk (from /proc), which says what bounds the peak.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from agentstate_site import bulk_data
from benchmarks import report
from tools.pgcluster import Cluster, free_port

REPO = Path(__file__).resolve().parent.parent
LUA = Path(__file__).with_name("load.lua")
SESSIONS = 32
HISTORY = 1_000
PACED_CONNECTIONS = 16
PACED_FRACTIONS = (0.25, 0.5, 0.75)
TARGET_HELLO_RATIO = 0.2
TARGET_P99_MS = 20.0
_TICKS = os.sysconf("SC_CLK_TCK")


class Served(NamedTuple):
    """A gunicorn the benchmark started: its URL, its master's pid, and what it was configured with."""

    url: str
    pid: int
    config: dict[str, Any]


# --- Processes and CPU -------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _cpu_seconds(pid: int) -> float:
    """CPU of ``pid``, of its living children and of the children it has reaped: a server's
    total, even across workers or backends that came and went."""

    def ticks(p: int, reaped: bool) -> int:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0
        own = int(fields[11]) + int(fields[12])
        return own + (int(fields[13]) + int(fields[14]) if reaped else 0)

    return (ticks(pid, True) + sum(ticks(child, False) for child in _children(pid))) / _TICKS


def server_config(env: dict[str, str]) -> dict[str, Any]:
    """What gunicorn makes of the shipped gunicorn.conf.py under ``env`` (read by gunicorn itself, in
    a process of its own): the GUNICORN_* variables set and the settings they give, as a run records
    them."""
    code = (
        "import json, sys; from gunicorn.app.wsgiapp import WSGIApplication; "
        "sys.argv = ['gunicorn', '-c', 'gunicorn.conf.py']; c = WSGIApplication().cfg; "
        "print(json.dumps({'worker_class': c.worker_class_str, 'workers': c.workers, 'threads': c.threads, "
        "'keepalive': c.keepalive, 'timeout': c.timeout, 'max_requests': c.max_requests}))"
    )
    read = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    variables = {k: v for k, v in sorted(env.items()) if k.startswith("GUNICORN_") and k != "GUNICORN_BIND"}
    served = {"config": "gunicorn.conf.py", "app": env.get("DJANGO_SETTINGS_MODULE", "agentstate_site.settings")}
    return {**served, "environment": variables, **json.loads(read.stdout.splitlines()[-1])}


@contextlib.contextmanager
def gunicorn(*, env: dict[str, str], settings: dict[str, str], log: Path) -> Iterator[Served]:
    """Serve the app of ``env``'s DJANGO_SETTINGS_MODULE as it ships: ``gunicorn -c gunicorn.conf.py``,
    changed only by the GUNICORN_* variables of ``settings`` (and of ``env``: an operator's shell), on
    a free port. The run records what it served (``report.SERVERS``, written with the results)."""
    if unknown := [name for name in settings if not name.startswith("GUNICORN_")]:
        raise ValueError(f"a benchmark's server is set as an operator sets one, by GUNICORN_* variables: {unknown}")
    port = free_port()
    env = {**env, **settings, "GUNICORN_BIND": f"127.0.0.1:{port}"}
    config = server_config(env)
    report.SERVERS.append(config)
    command = [str(Path(sys.executable).with_name("gunicorn")), "-c", str(REPO / "gunicorn.conf.py")]
    with log.open("ab") as out:
        server = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/", timeout=2)
                break
            except urllib.error.HTTPError:
                break  # any answer means the workers are up
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"gunicorn did not start; see {log}") from None
                time.sleep(0.2)
        yield Served(url=url, pid=server.pid, config=config)
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextlib.contextmanager
def documented_proxy(app_url: str, workdir: Path) -> Iterator[str]:
    """HAProxy in front of ``app_url`` (as both of its app servers), set up by docs/SCALING.md's
    recipe steps as written (``python -m tools.recipe``: its self-signed certificate, its
    configuration); yields its HTTPS URL. Meanwhile SSL_CERT_FILE names the certificate, which
    httpx's clients trust as an operator's would."""
    https, app = free_port(), app_url.removeprefix("http://")
    site = {"HAPROXY_ETC": str(workdir), "HAPROXY_LOG": "stdout format raw", "PROXY_NAME": "127.0.0.1"}
    site |= {"PROXY_SAN": "IP:127.0.0.1", "HTTPS_BIND": f"127.0.0.1:{https}", "HTTP_BIND": f"127.0.0.1:{free_port()}"}
    site |= {"APP1": app, "APP2": app, "MCP1": app, "MCP2": app}  # the recipe's /mcp backend: unused here
    for step in ("proxy-cert", "proxy"):
        script = subprocess.run(
            [sys.executable, "-m", "tools.recipe", step], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
        subprocess.run(["bash", "-euo", "pipefail", "-c", script], env={**os.environ, **site}, check=True)
    with (workdir / "haproxy.log").open("ab") as out:
        proxy = subprocess.Popen(["haproxy", "-db", "-f", str(workdir / "haproxy.cfg")], stdout=out, stderr=out)
    trusted = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = str(workdir / "agentstate.crt")
    url = f"https://127.0.0.1:{https}"
    try:
        import httpx

        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + "/livez", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proxy.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"HAProxy did not pass requests on; see {workdir / 'haproxy.log'}")
            time.sleep(0.2)
        yield url
    finally:
        if trusted is None:
            os.environ.pop("SSL_CERT_FILE", None)
        else:
            os.environ["SSL_CERT_FILE"] = trusted
        proxy.terminate()
        proxy.wait(timeout=30)


class StatementCounter:
    """Statements the benchmark database ran since the last reset (pg_stat_statements)."""

    def __init__(self, cluster: Cluster, dbname: str):
        import psycopg

        self.conn = psycopg.connect(cluster.url(), autocommit=True)
        self.dbname = dbname

    def reset(self) -> None:
        self.conn.execute("SELECT pg_stat_statements_reset()")

    def statements(self, top: int = 0) -> tuple[int, list[tuple[int, str]]]:
        # Foreign-key checks run inside PostgreSQL (RI triggers: SELECT 1 FROM ONLY ... FOR KEY
        # SHARE) but show up as statements: not round trips, so left out.
        where = (
            "dbid = (SELECT oid FROM pg_database WHERE datname = %s) "
            "AND query NOT LIKE 'SELECT %% FROM ONLY %%FOR KEY SHARE OF%%'"
        )
        total = self.conn.execute(
            f"SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE {where}", [self.dbname]
        )
        heaviest = self.conn.execute(
            f"SELECT calls, query FROM pg_stat_statements WHERE {where} ORDER BY calls DESC LIMIT %s",
            [self.dbname, top],
        )
        return int(total.fetchone()[0]), [(int(c), q) for c, q in heaviest.fetchall()]


# --- One measured point ------------------------------------------------------------------------


def _wrk(*, url: str, env: dict[str, str], connections: int, seconds: float) -> dict[str, Any]:
    command = [
        "wrk",
        f"-t{min(2, connections)}",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "5s",
        "-s",
        str(LUA),
        url,
    ]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("BENCH_JSON "))
    return json.loads(line.removeprefix("BENCH_JSON "))


def measure(
    *,
    target: dict[str, Any],
    counter: StatementCounter,
    postmaster_pid: int,
    connections: int,
    seconds: float,
    offered_rps: float | None = None,
) -> dict[str, Any]:
    """One wrk run against ``target``; paced to ``offered_rps`` when given, else closed-loop."""
    env = {**os.environ, **target["wrk_env"], "BENCH_DELAY_MS": "0"}
    if offered_rps:
        env["BENCH_DELAY_MS"] = f"{connections * 1000 / offered_rps:.3f}"
    counter.reset()
    app_cpu, db_cpu = _cpu_seconds(target["pid"]), _cpu_seconds(postmaster_pid)
    wrk_cpu = os.times().children_user + os.times().children_system
    result = _wrk(url=target["url"], env=env, connections=connections, seconds=seconds)
    wall = result["duration_us"] / 1e6
    app_cpu, db_cpu = _cpu_seconds(target["pid"]) - app_cpu, _cpu_seconds(postmaster_pid) - db_cpu
    wrk_cpu = os.times().children_user + os.times().children_system - wrk_cpu
    statements, heaviest = counter.statements(top=6)
    requests = max(result["requests"], 1)
    lat = result["latency_us"]
    return {
        "target": target["name"],
        "connections": connections,
        "offered_rps": round(offered_rps, 1) if offered_rps else None,
        "rps": round(result["requests"] / wall, 1),
        "requests": result["requests"],
        "p50_ms": lat["p50"] / 1000,
        "p95_ms": lat["p95"] / 1000,
        "p99_ms": lat["p99"] / 1000,
        "max_ms": lat["max"] / 1000,
        "errors": sum(result["errors"].values()),
        "error_detail": result["errors"],
        "statements_per_request": round(statements / requests, 2),
        "heaviest_statements": [{"calls_per_request": round(c / requests, 2), "query": q[:200]} for c, q in heaviest],
        "cpu_cores": {
            "app": round(app_cpu / wall, 2),
            "postgres": round(db_cpu / wall, 2),
            "wrk": round(wrk_cpu / wall, 2),
        },
        "cpu_ms_per_request": {
            "app": round(app_cpu * 1000 / requests, 3),
            "postgres": round(db_cpu * 1000 / requests, 3),
        },
    }


# --- The run -----------------------------------------------------------------------------------


def _prepare() -> tuple[str, list[str]]:
    """A tenant, an agent key and SESSIONS sessions of HISTORY messages and 100 rounds each."""
    from agentstate.tenancy.services import api_key_create, tenant_get_or_create
    from sessions_app.models import Session

    tenant = tenant_get_or_create(slug="bench")
    _, key = api_key_create(tenant=tenant, name="http benchmark")
    bulk_data.sessions_create(tenant=tenant, user_id="agent", count=SESSIONS)
    sessions = list(Session.objects.filter(tenant=tenant, user_id="agent"))
    for session in sessions:
        bulk_data.history_fill(session=session, messages=HISTORY, rounds=100)
    bulk_data.analyze()
    return key, [f"/api/v1/users/agent/sessions/{s.session_id}/" for s in sessions]


def _profile(*, target: dict[str, Any], connections: int, seconds: float, out: Path) -> dict[str, Any]:
    """py-spy over every worker while wrk saturates ``target``: where the workers' busy samples
    go, each given to the innermost frame that belongs to a known layer."""
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        return {"skipped": "py-spy is not installed (pip install -e '.[bench]')"}
    recorder = subprocess.Popen(
        [
            str(spy),
            "record",
            "--pid",
            str(target["pid"]),
            "--subprocesses",
            "--rate",
            "200",
            "--duration",
            str(int(seconds)),
            "--format",
            "raw",
            "--output",
            str(out),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1)
    _wrk(
        url=target["url"],
        env={**os.environ, **target["wrk_env"], "BENCH_DELAY_MS": "0"},
        connections=connections,
        seconds=seconds - 2,
    )
    recorder.wait(timeout=seconds + 30)
    return summarize_profile(out)


# Innermost frame first: a sample in re or copy called by the ORM counts for the ORM.
_PROFILE_LAYERS = (
    ("psycopg: sending queries, waiting for PostgreSQL", ("psycopg/", "psycopg_binary")),
    ("Django ORM: building queries, model instances", ("django/db/",)),
    ("DRF: negotiation, parsing, permissions, serializers", ("rest_framework/",)),
    (
        "agentstate code (views, services, validation, auth)",
        ("agentstate/", "sessions_app/", "userdata_app/", "backends/"),
    ),
    ("Django: middleware, request and response", ("django/", "whitenoise/")),
    ("logging", ("logging/",)),
    ("gunicorn: HTTP parsing, socket reads and writes", ("gunicorn/",)),
)
_IDLE = ("select (selectors.py", "_worker (concurrent/futures/thread.py", "wait_for_signals", "sleep (gunicorn/arbiter")


def summarize_profile(path: Path) -> dict[str, Any]:
    """Share of the workers' busy samples per layer, and the heaviest innermost frames."""
    layers: dict[str, int] = {}
    leaves: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        all_frames = stack.split(";")
        frames = [f for f in all_frames if f and not f.startswith(("process ", "thread "))]
        if sum(f.startswith("process ") for f in all_frames) < 2 or not frames or frames[-1].startswith(_IDLE):
            continue  # the master process, or a thread waiting for work
        n = int(count)
        total += n
        leaves[frames[-1]] = leaves.get(frames[-1], 0) + n
        layer = next(
            (name for frame in reversed(frames) for name, marks in _PROFILE_LAYERS if any(m in frame for m in marks)),
            "other",
        )
        layers[layer] = layers.get(layer, 0) + n
    share = lambda n: round(100 * n / max(total, 1), 1)  # noqa: E731
    return {
        "samples": total,
        "share_percent": {name: share(n) for name, n in sorted(layers.items(), key=lambda kv: -kv[1])},
        "top_frames": [
            {"frame": f, "percent": share(n)} for f, n in sorted(leaves.items(), key=lambda kv: -kv[1])[:15]
        ],
        "raw": str(path),
    }


def run(
    *, cluster: Cluster, quick: bool = False, settings: dict[str, str] | None = None, profile: bool = True
) -> dict[str, Any]:
    """``settings``: the GUNICORN_* variables both servers run with (the shipped defaults otherwise)."""
    from django.db import connection

    seconds = 5 if quick else 12
    sweep = (1, 4, 16) if quick else (1, 2, 4, 8, 16, 32)
    key, service_paths = _prepare()
    dbname = connection.settings_dict["NAME"]
    counter = StatementCounter(cluster, dbname)
    report.RESULTS_DIR.mkdir(exist_ok=True)
    log = report.RESULTS_DIR / "http-servers.log"
    env = {k: v for k, v in os.environ.items() if k != "AGENTSTATE_API_RATE"}
    env.update(
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_LOG_LEVEL="INFO",
        GUNICORN_LOG_LEVEL="warning",
        # Measure steady state: a recycled worker re-imports Django (about a second of CPU).
        GUNICORN_MAX_REQUESTS="0",
    )
    points: list[dict[str, Any]] = []
    peaks: dict[str, dict[str, Any]] = {}
    profile_result: dict[str, Any] = {}
    with (
        gunicorn(
            env={**env, "DJANGO_SETTINGS_MODULE": "benchmarks.baseline_settings"}, settings=settings or {}, log=log
        ) as (hello_url, hello_pid, _),
        gunicorn(
            env={**env, "DJANGO_SETTINGS_MODULE": "agentstate_site.settings"}, settings=settings or {}, log=log
        ) as (
            service_url,
            service_pid,
            served,
        ),
    ):
        targets = [
            {
                "name": "append",
                "url": service_url,
                "pid": service_pid,
                "wrk_env": {"BENCH_MODE": "append", "BENCH_KEY": key, "BENCH_PATHS": ",".join(service_paths)},
            },
            {
                "name": "mixed",
                "url": service_url,
                "pid": service_pid,
                "wrk_env": {"BENCH_MODE": "mixed", "BENCH_KEY": key, "BENCH_PATHS": ",".join(service_paths)},
            },
            # The ceiling: a Django view that does nothing, under the same gunicorn settings.
            {
                "name": "hello",
                "url": hello_url,
                "pid": hello_pid,
                "wrk_env": {"BENCH_MODE": "hello", "BENCH_PATHS": "/hello/"},
            },
        ]
        common = {"counter": counter, "postmaster_pid": cluster.pid, "seconds": seconds}
        for target in targets:
            _wrk(
                url=target["url"],
                env={**os.environ, **target["wrk_env"], "BENCH_DELAY_MS": "0"},
                connections=4,
                seconds=2,
            )
            print(f"http: {target['name']}: sweep over {', '.join(map(str, sweep))} connections, {seconds} s each")
            sweep_points = [measure(target=target, connections=c, **common) for c in sweep]
            points += sweep_points
            peak = max(sweep_points, key=lambda p: p["rps"])
            peaks[target["name"]] = peak
            if target["name"] in ("append", "mixed"):
                paced = ", ".join(f"{f:.0%}" for f in PACED_FRACTIONS)
                print(f"http: {target['name']}: paced at {paced} of {peak['rps']:.0f} req/s")
                points += [
                    measure(target=target, connections=PACED_CONNECTIONS, offered_rps=f * peak["rps"], **common)
                    for f in PACED_FRACTIONS
                ]
        if profile:
            print("http: profiling the append at its peak with py-spy")
            append = next(t for t in targets if t["name"] == "append")
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            profile_result = _profile(
                target=append,
                connections=peaks["append"]["connections"],
                seconds=10,
                out=report.RESULTS_DIR / f"http-profile-append-{stamp}.txt",
            )
    half = {
        name: next(
            p
            for p in points
            if p["target"] == name and p["offered_rps"] and abs(p["offered_rps"] / peaks[name]["rps"] - 0.5) < 0.01
        )
        for name in ("append", "mixed")
    }
    ratio = peaks["append"]["rps"] / peaks["hello"]["rps"]
    return {
        "workers": served["workers"],
        "threads": served["threads"],
        "conn_health_checks": connection.settings_dict["CONN_HEALTH_CHECKS"],
        "seconds_per_point": seconds,
        "sessions": SESSIONS,
        "history": HISTORY,
        "points": points,
        "peaks": {name: {"rps": p["rps"], "connections": p["connections"]} for name, p in peaks.items()},
        "targets": {
            "append_over_hello": {
                "value": round(ratio, 2),
                "target": TARGET_HELLO_RATIO,
                "met": ratio >= TARGET_HELLO_RATIO,
            },
            "p99_at_half_peak_ms": {
                name: {"value": p["p99_ms"], "target": TARGET_P99_MS, "met": p["p99_ms"] < TARGET_P99_MS}
                for name, p in half.items()
            },
            "errors": {
                "value": sum(p["errors"] for p in points),
                "target": 0,
                "met": not any(p["errors"] for p in points),
            },
        },
        "profile": profile_result,
    }


def print_table(result: dict[str, Any]) -> None:
    headers = [
        "target",
        "conns",
        "offered/s",
        "req/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "errors",
        "stmts/req",
        "CPU app/db/wrk",
    ]
    rows = [
        [
            p["target"],
            p["connections"],
            f"{p['offered_rps']:.0f}" if p["offered_rps"] else "max",
            f"{p['rps']:.0f}",
            f"{p['p50_ms']:.2f}",
            f"{p['p95_ms']:.2f}",
            f"{p['p99_ms']:.2f}",
            p["errors"],
            f"{p['statements_per_request']:.2f}",
            "/".join(f"{p['cpu_cores'][k]:.2f}" for k in ("app", "postgres", "wrk")),
        ]
        for p in result["points"]
    ]
    print(report.table(headers, rows))
    t = result["targets"]
    print(
        f"append / bare view peak: {t['append_over_hello']['value']:.2f}x (target >= {TARGET_HELLO_RATIO}) "
        f"{'ok' if t['append_over_hello']['met'] else 'MISSED'}"
    )
    for name, v in t["p99_at_half_peak_ms"].items():
        print(
            f"{name}: p99 at half peak {v['value']:.1f} ms (target < {TARGET_P99_MS:.0f}) "
            f"{'ok' if v['met'] else 'MISSED'}"
        )
    print(f"errors: {t['errors']['value']} {'ok' if t['errors']['met'] else 'MISSED'}")
    if result["profile"].get("share_percent"):
        print("append at peak, the workers' busy samples by layer (py-spy):")
        for name, percent in result["profile"]["share_percent"].items():
            print(f"  {percent:5.1f}%  {name}")
