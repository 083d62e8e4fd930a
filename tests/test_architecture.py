"""House rules of DESIGN.md that code review alone would let slip."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imported_modules(app: str) -> set[str]:
    modules: set[str] = set()
    for path in (ROOT / app).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules.add(node.module)
                modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


@pytest.mark.parametrize(("app", "other"), [("sessions_app", "userdata_app"), ("userdata_app", "sessions_app")])
def test_apps_never_import_each_others_models(app, other):
    """Erasure spans both apps by asking each one's services; a model import would let a
    cascade or a query cross the boundary unseen."""
    crossing = {m for m in _imported_modules(app) if m == f"{other}.models" or m.startswith(f"{other}.models.")}
    assert not crossing, f"{app} imports {sorted(crossing)}"
