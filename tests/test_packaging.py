"""The wheel carries every package of the service: pyproject.toml lists them (it must, to map the
top-level templates/ folder into the wheel), so a new package left off the list would be missing
from an installed service while every test in the checkout passes."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed_for_the_wheel():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for root in ("agentstate", "agentstate_site", "backends", "sessions_app", "userdata_app")
        for init in (ROOT / root).rglob("__init__.py")
    }
    assert found | {"agentstate.templates"} == listed


# The framework each extra brings, by its import name: an integration module imports with its own
# extra alone (the base install's httpx and pydantic, and that framework).
EXTRA_FRAMEWORKS = {"adk": "google.adk", "langgraph": "langgraph", "openai-agents": "agents"}
NOT_IN_ANY_EXTRA = ("django", "rest_framework")  # the server's: the client runs without them
INTEGRATIONS = sorted(path.stem for path in (ROOT / "agentstate" / "integrations").glob("*.py"))
IMPORT_WITHOUT = """
import importlib, importlib.abc, sys
blocked = sys.argv[2:]
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in blocked):
            raise ModuleNotFoundError(f"No module named {name!r} (not installed with this extra)", name=name)
sys.meta_path.insert(0, Absent())
importlib.import_module(sys.argv[1])
"""


def _extra_of(module: str) -> str | None:
    """The extra a module of agentstate.integrations belongs to, by its name (None: the base's)."""
    return next((extra for extra in EXTRA_FRAMEWORKS if module.startswith(extra.replace("-", "_"))), None)


def _absent(module: str) -> list[str]:
    """What the module's extra does not install: the other extras' frameworks, and Django."""
    own = EXTRA_FRAMEWORKS.get(_extra_of(module) or "")
    return [*(name for name in EXTRA_FRAMEWORKS.values() if name != own), *NOT_IN_ANY_EXTRA]


def _top_level_imports(module: str) -> set[str]:
    """The modules ``module`` imports at its top level, through agentstate's own modules too (an
    import inside a function or under ``if``/``try`` is left out: it is lazy or guarded)."""
    found: set[str] = set()
    todo, seen = [module], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = ROOT.joinpath(*name.split("."))
        path = path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
        todo += [name for name in found if name.startswith("agentstate.")]
    return found


def test_every_framework_named_here_is_an_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_FRAMEWORKS) <= set(extras)


@pytest.mark.parametrize("module", INTEGRATIONS)
def test_no_integration_imports_what_its_extra_does_not_install(module):
    """The rule below, read from the source for the quick loop."""
    absent = _absent(module)
    imported = _top_level_imports(f"agentstate.integrations.{module}")
    assert not [name for name in imported if any(name == a or name.startswith(a + ".") for a in absent)]


@pytest.mark.servers  # a fresh process each: this one has imported every framework
@pytest.mark.parametrize("module", INTEGRATIONS)
def test_each_integration_imports_with_its_own_extra_alone(module):
    """``pip install agentstate-django[adk]`` gives ADK and none of LangGraph: every module of
    agentstate.integrations imports with the frameworks of the other extras (and Django) absent."""
    run = subprocess.run(
        [sys.executable, "-c", IMPORT_WITHOUT, f"agentstate.integrations.{module}", *_absent(module)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
