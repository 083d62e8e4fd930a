"""Where the service writes SQL by hand, and where it branches on the database vendor: the count a
change to the ORM-or-SQL balance is compared by. Standard library only::

    python3 -m tools.sql_sites            # totals, then each module's sites
    python3 -m tools.sql_sites --json     # the same as JSON, for a closing note's before and after

A raw-SQL site is a call that hands SQL text to the database: ``execute``/``executemany`` on a
cursor, ``Model.objects.raw``, ``QuerySet.extra``, ``RawSQL(...)`` and ``RunSQL`` outside
migrations. A statement is a string (or f-string) in the code that is SQL — it starts with a
statement's keyword and names a table or clause — wherever it is sent from. A vendor branch is a
comparison with ``connection.vendor`` (or any ``.vendor``).
Migrations, tests, benchmarks and these tools are not the service and are not counted.

A raw-SQL site is justified by a ``# Raw:`` comment line above it in its function (or right above
it, outside one) saying which benchmark and target of docs/PERFORMANCE.md it serves (``# Raw:
benchmarks/http_load.py append p99; ...``), or that the ORM has no form of the statement (``# Raw:
no ORM form: ...``). No module holds one unjustified, the core's (``core``: outside the framework
backends' packages) nor a backend's: tests/test_sql_sites.py fails on one.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agentstate", "agentstate_site", "sessions_app", "userdata_app", "backends")
SQL_METHODS = {"execute", "executemany", "raw", "extra"}
SQL_CALLABLES = {"RawSQL", "RunSQL"}
JUSTIFIED = re.compile(r"#\s*Raw:")
# The framework backends' server code: counted apart from the core's.
FRAMEWORK_PATHS = ("backends/",)
# As the code writes SQL: keywords in capitals.
STATEMENT_START = re.compile(r"\s*(SELECT|UPDATE|INSERT|DELETE|WITH|CREATE|DROP|ALTER|LOCK|SET|PRAGMA|COPY)\s")
STATEMENT_BODY = re.compile(r"\b(FROM|INTO|TABLE|WHERE|SET|LOCK|TRANSACTION|VALUES|INDEX|TRIGGER)\b|\w\(")


@dataclass(frozen=True)
class Site:
    module: str
    line: int
    kind: str  # "sql", "statement" or "vendor"
    what: str
    justified: bool = True  # a "sql" site: a ``# Raw:`` line stands above it (JUSTIFIED)
    core: bool = True  # outside the framework backends' packages (FRAMEWORK_PATHS)


def _callee(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _mentions_vendor(node: ast.AST) -> bool:
    return any(isinstance(child, ast.Attribute) and child.attr == "vendor" for child in ast.walk(node))


def _literal_text(node: ast.AST) -> str | None:
    """A string's text, or an f-string's literal parts joined; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " ".join(str(part.value) if isinstance(part, ast.Constant) else "x" for part in node.values)
    return None


def _docstrings_and_fragments(tree: ast.AST) -> set[int]:
    """ids of the strings that are not statements: docstrings and the literal parts of f-strings."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))
        elif isinstance(node, ast.JoinedStr):
            skip.update(id(part) for part in node.values)
    return skip


def _justified(lines: list[str], tree: ast.AST, line: int) -> bool:
    """Whether a ``# Raw:`` line stands above ``line``: between the start of the innermost function
    holding it and it, or, outside any function, in the comment lines right above it."""
    starts = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= (node.end_lineno or 0)
    ]
    if starts:
        return any(JUSTIFIED.search(text) for text in lines[max(starts) - 1 : line])
    above = line - 2
    while above >= 0 and lines[above].lstrip().startswith("#"):
        if JUSTIFIED.search(lines[above]):
            return True
        above -= 1
    return False


def _not_sql(node: ast.Call) -> bool:
    """An ``execute`` that hands no SQL: a management command's ``super().execute(...)``, a Redis
    pipeline's ``execute()`` (no arguments)."""
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
        return True
    return _callee(node) in {"execute", "executemany"} and not node.args and not node.keywords


def module_sites(path: Path, root: Path = ROOT) -> Iterator[Site]:
    """The raw-SQL sites, statements and vendor branches of one source file, in line order."""
    relative = path.relative_to(root).as_posix()
    module = relative.removesuffix(".py").replace("/", ".")
    core = not relative.startswith(FRAMEWORK_PATHS)
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source, filename=str(path))
    not_statements = _docstrings_and_fragments(tree)
    found: list[Site] = []
    for node in ast.walk(tree):
        text = None if id(node) in not_statements else _literal_text(node)
        if text is not None and STATEMENT_START.match(text) and STATEMENT_BODY.search(text):
            found.append(Site(module, getattr(node, "lineno", 0), "statement", " ".join(text.split())[:80], core=core))
        if isinstance(node, ast.Call):
            name = _callee(node)
            method_call = isinstance(node.func, ast.Attribute) and name in SQL_METHODS
            if (method_call and not _not_sql(node)) or (name in SQL_CALLABLES):
                justified = _justified(lines, tree, node.lineno)
                found.append(Site(module, node.lineno, "sql", name, justified=justified, core=core))
        elif isinstance(node, ast.Compare) and _mentions_vendor(node):
            found.append(Site(module, node.lineno, "vendor", ast.unparse(node)[:80], core=core))
        elif isinstance(node, ast.Match) and _mentions_vendor(node.subject):
            found.append(Site(module, node.lineno, "vendor", "match " + ast.unparse(node.subject), core=core))
    yield from sorted(found, key=lambda site: site.line)


def service_sources(root: Path = ROOT) -> Iterator[Path]:
    """The service's own Python files: its packages, without migrations."""
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" not in path.relative_to(root).parts:
                yield path


def count(root: Path = ROOT) -> dict[str, Any]:
    sites = [site for path in service_sources(root) for site in module_sites(path, root)]
    sql = [site for site in sites if site.kind == "sql"]
    statements = [site for site in sites if site.kind == "statement"]
    vendor = [site for site in sites if site.kind == "vendor"]
    unjustified = [site for site in sql if not site.justified]
    return {
        "sql_sites": len(sql),
        "sql_modules": len({site.module for site in sql}),
        "statements": len(statements),
        "statement_modules": len({site.module for site in statements}),
        "vendor_branches": len(vendor),
        "vendor_modules": len({site.module for site in vendor}),
        "unjustified": len(unjustified),
        "unjustified_core": len([site for site in unjustified if site.core]),
        "sites": [site.__dict__ for site in sites],
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python3 -m tools.sql_sites", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the counts and sites as JSON")
    args = parser.parse_args(argv)
    result = count()
    sites = [Site(**site) for site in result["sites"]]
    if args.json:
        sys.stdout.write(json.dumps(result, indent=1) + "\n")
        return
    lines = [
        f"{result['sql_sites']} raw-SQL sites in {result['sql_modules']} modules; "
        f"{result['statements']} SQL statements in {result['statement_modules']} modules; "
        f"{result['vendor_branches']} vendor branches in {result['vendor_modules']} modules; "
        f"{result['unjustified']} raw-SQL sites without a '# Raw:' line ({result['unjustified_core']} in the core)"
    ]
    lines += [
        f"{site.module}:{site.line}  {site.kind:9}  {site.what}"
        + ("" if site.justified else "  (no '# Raw:' line" + (", core)" if site.core else ")"))
        for site in sites
    ]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
