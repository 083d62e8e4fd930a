"""What a benchmark measures is the server as it ships: every gunicorn a suite starts goes through
one helper (benchmarks.http_load.gunicorn), which runs ``gunicorn -c gunicorn.conf.py`` changed only
by GUNICORN_* variables, as an operator changes it, and records what it served with the run. Read
from the source (the tests never import the benchmarks); cheap, no server."""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = {path.stem: ast.parse(path.read_text()) for path in (ROOT / "benchmarks").glob("*.py")}


def _function(module: str, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(MODULES[module]) if isinstance(n, ast.FunctionDef) and n.name == name)


def test_only_the_helper_starts_gunicorn_and_it_passes_no_option_but_the_shipped_file():
    helper = _function("http_load", "gunicorn")
    naming = [
        (module, node.lineno)
        for module, tree in MODULES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value == "gunicorn"
    ]
    inside = range(helper.lineno, (helper.end_lineno or helper.lineno) + 1)
    assert naming and all(module == "http_load" and line in inside for module, line in naming), naming
    commands = [n for n in ast.walk(helper) if isinstance(n, ast.List)]
    assert len(commands) == 1, "the helper builds one command"
    (command,) = commands
    assert [getattr(e, "value", None) for e in command.elts[1:2]] == ["-c"] and len(command.elts) == 3
    assert "gunicorn.conf.py" in ast.unparse(command.elts[2])


def test_every_start_sets_the_server_by_environment_only():
    calls = [
        (module, node)
        for module, tree in MODULES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "gunicorn"
    ]
    assert {module for module, _ in calls} >= {"http_load", "frameworks", "latency", "replicas"}
    for module, call in calls:
        assert not call.args and {k.arg for k in call.keywords} == {"env", "settings", "log"}, (module, call.lineno)


@pytest.mark.slow  # two processes that set Django up
def test_the_helper_refuses_other_settings_and_records_what_it_served(tmp_path):
    """GUNICORN_* only, each recorded, with what gunicorn made of them (in a process of its own, as
    ``python -m benchmarks`` runs)."""
    code = """
import json, sys
from pathlib import Path

import pytest
import django
django.setup()  # benchmarks.http_load's fixtures import the models
from benchmarks import http_load, report
try:
    with http_load.gunicorn(env={}, settings={"DJANGO_DEBUG": "1"}, log=Path(sys.argv[1])):
        pass
except ValueError as refused:
    print(json.dumps({"refused": str(refused), "recorded": report.SERVERS}))
print(json.dumps(http_load.server_config({**__import__("os").environ, "GUNICORN_THREADS": "2"})))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUNICORN_")}
    env.setdefault("DJANGO_SETTINGS_MODULE", "agentstate_site.settings")
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "log")], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    refused, served = map(json.loads, run.stdout.splitlines()[-2:])
    assert "DJANGO_DEBUG" in refused["refused"] and refused["recorded"] == []
    assert served["environment"] == {"GUNICORN_THREADS": "2"} and served["threads"] == 2
    assert served["worker_class"] == "gthread" and served["workers"] == (os.cpu_count() or 1) + 1
    helper = ast.unparse(_function("http_load", "gunicorn"))
    assert "report.SERVERS.append(config)" in helper and "server_config(env)" in helper
    assert "SERVERS" in ast.unparse(_function("report", "write_results"))


def test_the_proxy_run_gives_every_variable_the_recipe_names():
    """``frameworks --proxy`` sets HAProxy up by SCALING.md's recipe as written, under ``bash -u``: a
    variable the recipe gains (its /mcp backend's servers) and the benchmark does not give stops
    the run before it measures anything."""
    named = set()
    for step in ("proxy-cert", "proxy"):
        script = subprocess.run(
            [sys.executable, "-m", "tools.recipe", step], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        named |= set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", script))
    given = {
        node.value
        for node in ast.walk(_function("http_load", "documented_proxy"))
        if isinstance(node, ast.Dict)
        for node in node.keys
        if isinstance(node, ast.Constant)
    }
    assert named and not named - given - set(os.environ), sorted(named - given)


def test_the_adapters_measured_send_through_the_transports_the_clients_ship_with():
    """The framework suite counts requests on the way into ``blocking_transport()`` and
    ``async_transport()``, what a client given no transport uses; no benchmark builds httpx's own
    transports for agentstate's adapters in their place."""
    counter = next(
        n for n in ast.walk(MODULES["frameworks"]) if isinstance(n, ast.ClassDef) and n.name == "RequestCount"
    )
    called = {getattr(n.func, "id", None) for n in ast.walk(counter) if isinstance(n, ast.Call)}
    assert {"blocking_transport", "async_transport"} <= called
    built = [
        (module, node.lineno)
        for module, tree in MODULES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("HTTPTransport", "AsyncHTTPTransport")
    ]
    assert built == []
