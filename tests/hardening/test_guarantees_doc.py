"""docs/GUARANTEES.md and the README's summary name real tests: each `path.py::test_name` (and each
bare test file) exists."""

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = re.compile(r"`([a-z_/]+\.py)(?:::(test_\w+))?`")
DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.M)


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
        elif name and name not in functions(file):
            missing.append(f"{path}::{name}")
    assert not missing, f"{document} names tests that do not exist: {missing}"


@cache
def functions(file: Path) -> frozenset[str]:
    """The functions ``file`` defines, read once however many references name it (a line's
    ``def``: parsing the 70-odd files named took seconds)."""
    return frozenset(DEFINITION.findall(file.read_text()))
