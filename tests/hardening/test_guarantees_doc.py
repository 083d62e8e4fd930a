"""docs/GUARANTEES.md and the README's summary name real tests: each `path.py::test_name` (and each
bare test file) exists."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = re.compile(r"`([a-z_/]+\.py)(?:::(test_\w+))?`")


@pytest.mark.parametrize("document,at_least", [("docs/GUARANTEES.md", 40), ("README.md", 10)])
def test_every_test_the_guarantees_name_exists(document, at_least):
    doc = (ROOT / document).read_text()
    references = REFERENCE.findall(doc)
    assert len(references) > at_least
    missing = []
    for path, name in references:
        file = ROOT / "tests" / path
        if not file.exists():
            missing.append(path)
        elif name and name not in {
            node.name
            for node in ast.walk(ast.parse(file.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        }:
            missing.append(f"{path}::{name}")
    assert not missing, f"{document} names tests that do not exist: {missing}"
