"""docs/GUARANTEES.md names real tests: each `path.py::test_name` (and each bare test file) exists."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = re.compile(r"`([a-z_/]+\.py)(?:::(test_\w+))?`")


def test_every_test_the_guarantees_name_exists():
    doc = (ROOT / "docs" / "GUARANTEES.md").read_text()
    references = REFERENCE.findall(doc)
    assert len(references) > 40
    missing = []
    for path, name in references:
        file = ROOT / "tests" / path
        if not file.exists():
            missing.append(path)
        elif name and name not in {
            node.name for node in ast.walk(ast.parse(file.read_text())) if isinstance(node, ast.FunctionDef)
        }:
            missing.append(f"{path}::{name}")
    assert not missing, f"docs/GUARANTEES.md names tests that do not exist: {missing}"
