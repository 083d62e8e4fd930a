"""The house rules of docs/DESIGN.md, "Layers", that code review alone would let slip."""

from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_imports_run_one_way():
    """The contracts in pyproject.toml ([tool.importlinter]): the project level on top, then
    userdata_app, then sessions_app, then the platform, never upwards; userdata_app reaches
    sessions_app through its services and selectors, never its models (erasure asks each app to
    erase its own part); the client imports no Django."""
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0
