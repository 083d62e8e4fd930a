"""Every install line a user may copy installs this project or what it declares: "agentstate" on the
package index is another project, so an install line or an extra naming it would install someone
else's code."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OURS = canonicalize_name(PROJECT["name"])
EXTRAS = PROJECT["optional-dependencies"]
REQUIREMENTS = [Requirement(line) for line in [*PROJECT["dependencies"], *(r for rs in EXTRAS.values() for r in rs)]]
DECLARED = {canonicalize_name(r.name) for r in REQUIREMENTS} - {OURS}

SKIPPED_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "build"}
TEXT_SUFFIXES = {".md", ".py", ".toml", ".yaml", ".yml", ".cfg", ".txt", ".sh", ".html"}
# `pip install` (also `"$VENV/bin/pip" install`), then its arguments: quoted, or up to a space or
# what ends a shell command or a sentence in the docs (a backtick, `&&`, `;`, `#`, `)`).
INSTALL = re.compile(r"""\bpip["']?\s+install((?:\s+(?:"[^"\n]*"|'[^'\n]*'|[^\s"'`()&;|#<>]+))+)""")
ARGUMENT = re.compile(r""""[^"\n]*"|'[^'\n]*'|[^\s"'`()&;|#<>]+""")
OPTIONS_WITH_A_VALUE = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "-t", "--target"}


def _text_files() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        here = Path(folder)
        found += [here / f for f in files if Path(f).suffix in TEXT_SUFFIXES or here.name == ".ci"]
    return found


def _install_lines() -> list[tuple[str, str]]:
    """(where, requirement) for each thing a `pip install` line in the repository installs."""
    lines = []
    for path in _text_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in INSTALL.finditer(line):
                arguments = [a.strip("\"'") for a in ARGUMENT.findall(match.group(1))]
                skip_next = False
                for argument in arguments:
                    if skip_next or argument.startswith(("-", "$")):  # options, and a shell variable's value
                        skip_next = argument in OPTIONS_WITH_A_VALUE
                        continue
                    lines.append((f"{path.relative_to(ROOT)}:{number}", argument))
    return lines


def _problem(requirement: str) -> str | None:
    """What is wrong with one install argument, or None."""
    extras = set(re.findall(r"\[([^\]]*)\]", requirement)[0].split(",")) if "[" in requirement else set()
    unknown_extras = {e.strip() for e in extras} - set(EXTRAS)
    if requirement.startswith((".", "/")) and ".whl" not in requirement:  # this checkout
        return f"no such extra {unknown_extras}" if unknown_extras else None
    if ".whl" in requirement:  # a wheel built from this checkout: dist/<name>-<version>-….whl
        name = Path(requirement.split("[")[0]).name.split("-")[0]
        if canonicalize_name(name) != OURS:
            return f"a wheel of {name!r}, not of {OURS!r}"
        return f"no such extra {unknown_extras}" if unknown_extras else None
    name = canonicalize_name(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group())
    if name == OURS:
        return f"no such extra {unknown_extras}" if unknown_extras else None
    if name not in DECLARED:
        return f"{name!r} is neither {OURS!r} nor a declared dependency"
    return None


# Names on the package index that are other projects: ours must be none of them.
OTHER_PROJECTS = {"agentstate"}  # 1.0.2 there, "Firebase for AI Agents"


def test_the_distribution_name_is_not_another_projects():
    assert OURS not in OTHER_PROJECTS


def test_the_scan_finds_the_install_lines_users_copy():
    found = _install_lines()
    assert any(
        where.startswith("README.md") and what == ".[server]" for where, what in found
    )  # the first set-up command
    assert any(where.startswith("README.md") and what.startswith(f"{OURS}[langgraph] @ git+") for where, what in found)
    assert any(where.startswith("agentstate_site/cli.py") and what == f"{OURS}[server]" for where, what in found)
    assert any(where.startswith("docs/CLIENT.md") and what.startswith(f"{OURS}[adk] @ git+") for where, what in found)


def test_every_install_line_installs_this_project_or_a_declared_dependency():
    problems = [f"{where}: {what}: {_problem(what)}" for where, what in _install_lines() if _problem(what)]
    assert not problems, "\n".join(problems)


def test_the_judge_refuses_the_other_projects_name_and_unknown_extras():
    for other in OTHER_PROJECTS:
        assert _problem(f"{other}[server]") == f"{other!r} is neither {OURS!r} nor a declared dependency"
    assert _problem("dist/agentstate-0.1.0-py3-none-any.whl[server]") == f"a wheel of 'agentstate', not of {OURS!r}"
    assert _problem(".[nonesuch]") == "no such extra {'nonesuch'}"
    assert _problem(f"{OURS}[adk]") is None
    assert _problem("google-adk") is None


def test_the_extras_name_this_project_by_its_own_name():
    own = [r for r in REQUIREMENTS if canonicalize_name(r.name).startswith("agentstate")]
    assert own, "the test extra installs the server, dev and bench extras through this project's name"
    assert {canonicalize_name(r.name) for r in own} == {OURS}
    assert all(r.extras <= set(EXTRAS) for r in own)
