"""The examples as a user meets them: each runs on what its extra installs, and all three take the
server and the key the same way (AGENTSTATE_URL, AGENTSTATE_API_KEY)."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OURS = canonicalize_name(PROJECT["name"])
EXTRAS = PROJECT["optional-dependencies"]

# Each example and the extra a user installs to run it.
EXAMPLE_EXTRAS = {"adk_agent.py": "adk", "langgraph_graph.py": "langgraph", "openai_agents_chat.py": "openai-agents"}


def _installed_closure(requirements: list[Requirement]) -> set[str]:
    """The distributions installing these requirements brings in (as installed here)."""
    seen: set[str] = set()
    todo = list(requirements)
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen or name == OURS:
            continue
        seen.add(name)
        for line in importlib.metadata.requires(requirement.name) or []:
            dependency = Requirement(line)
            wanted = [{"extra": e} for e in requirement.extras] or [{"extra": ""}]
            if dependency.marker is None or any(dependency.marker.evaluate(env) for env in wanted):
                todo.append(dependency)
    return seen


@functools.cache
def _distributions_by_top_level() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _distribution_of(module: str) -> str:
    """The installed distribution whose files hold a module (namespace packages such as
    ``langgraph`` or ``google`` are shared by several)."""
    origin = Path(importlib.util.find_spec(module).origin).resolve()
    for name in _distributions_by_top_level()[module.split(".")[0]]:
        distribution = importlib.metadata.distribution(name)
        site = Path(distribution.locate_file("")).resolve()
        if origin.is_relative_to(site) and origin.relative_to(site).as_posix() in map(str, distribution.files or []):
            return canonicalize_name(name)
    raise AssertionError(f"no installed distribution holds {module}")


def _third_party_imports(example: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(example.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return {m for m in modules if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "agentstate"}


def test_every_example_has_its_extra():
    assert {p.name for p in (ROOT / "examples").glob("*.py")} == set(EXAMPLE_EXTRAS)


@pytest.mark.parametrize("example,extra", EXAMPLE_EXTRAS.items())
def test_each_extra_installs_what_its_example_imports(example, extra):
    installed = _installed_closure([Requirement(r) for r in [*PROJECT["dependencies"], *EXTRAS[extra]]])
    missing = {m: _distribution_of(m) for m in _third_party_imports(ROOT / "examples" / example)}
    missing = {m: d for m, d in missing.items() if d not in installed}
    assert not missing, f"{example} imports modules of distributions the {extra!r} extra does not install: {missing}"


@pytest.mark.servers
@pytest.mark.parametrize("example", EXAMPLE_EXTRAS)
def test_each_example_takes_the_server_from_agentstate_url_and_names_it_when_unreachable(example):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    env = {name: value for name, value in os.environ.items() if not name.startswith(("AGENTSTATE_", "DJANGO_"))}
    env |= {"AGENTSTATE_URL": f"http://127.0.0.1:{port}", "AGENTSTATE_API_KEY": "key", "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / example)], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 1
    assert "agentstate.client.errors.NetworkError: " in run.stderr and f"http://127.0.0.1:{port}/api/v1/" in run.stderr
