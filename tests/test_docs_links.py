"""Every document the repository cites is inside it: a Markdown file named in code, configuration
or docs (a link or a bare mention), and every relative link of a Markdown page, resolves to a file
of the repository, relative to the citing file, the repository root or docs/; a section it names
(a link's #anchor, or a quoted or starred title right after the file name) is a heading there."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCANNED_SUFFIXES = {".py", ".md", ".toml", ".html", ".yaml", ".yml", ".cfg", ".ini", ".txt", ".lua"}
SCANNED_NAMES = {".gitignore"}
SCRIPT_DIRS = {".ci"}  # shell scripts, named without a suffix: every file in them is scanned
SKIPPED_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", "staticfiles", "artifacts"}
SKIPPED_PATHS = {Path("benchmarks/results")}  # benchmark output, not documents
# This file's own examples are fixtures of the checker, not citations.
THIS_FILE = Path(__file__).resolve().relative_to(ROOT)

URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")
# A Markdown file named anywhere, with an optional section: `X.md, "Title"`, `X.md, *Title*` or X.md#anchor.
MENTION = re.compile(
    r"(?<![\w/.~-])(?P<path>(?:~?/)?(?:[\w.-]+/)*[\w-][\w.-]*\.md)(?![\w-])"
    r"(?:#(?P<anchor>[\w-]+)|`?\)?,\s*(?:\"(?P<quoted>[^\"\n]+)\"|\*(?P<starred>[^*\n]+)\*))?"
)
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def _scanned_files(root: Path):
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [
            d
            for d in dirs
            if d not in SKIPPED_DIRS
            and not d.endswith((".egg-info", "_cache"))
            and (here / d).relative_to(root) not in SKIPPED_PATHS
        ]
        in_script_dir = here != root and here.relative_to(root).parts[0] in SCRIPT_DIRS
        for name in files:
            path = here / name
            if in_script_dir or path.suffix in SCANNED_SUFFIXES or name in SCANNED_NAMES:
                yield path


def _resolve(root: Path, citing: Path, cited: str) -> Path | None:
    """The file inside ``root`` that ``cited`` names from ``citing``, or None."""
    for base in (citing.parent, root, root / "docs"):
        candidate = (base / cited).resolve()
        if candidate.is_relative_to(root) and candidate.is_file():
            return candidate
    return None


def _headings(document: Path) -> list[str]:
    """A Markdown file's headings as text, outside fenced code."""
    headings, fenced = [], False
    for line in document.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            headings.append(line.lstrip("#").strip())
    return headings


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _section_missing(document: Path, *, anchor: str | None, title: str | None) -> str | None:
    if document.suffix != ".md" or (anchor is None and title is None):
        return None
    headings = _headings(document)
    if anchor is not None and anchor.lower() not in {_anchor(h) for h in headings}:
        return f"#{anchor}"
    if title is not None and not any(title.lower() in h.replace("`", "").lower() for h in headings):
        return f'"{title}"'
    return None


def broken_citations(root: Path) -> list[str]:
    """``file:line: what`` for each citation that leaves ``root`` or names a missing file or section."""
    root = root.resolve()
    broken = []
    for path in _scanned_files(root):
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            where = f"{path.relative_to(root)}:{number}"
            cited = [(m["path"], m["anchor"], m["quoted"] or m["starred"]) for m in MENTION.finditer(URL.sub("", line))]
            if path.suffix == ".md":
                for link in LINK.finditer(line):
                    target, _, anchor = link["target"].partition("#")
                    if target and not URL.match(target) and not target.startswith("mailto:") and ".md" not in target:
                        cited.append((target, anchor or None, None))
            for target, anchor, title in cited:
                found = _resolve(root, path, target)
                if found is None:
                    broken.append(f"{where}: {target} is not a file of the repository")
                elif missing := _section_missing(found, anchor=anchor, title=title):
                    broken.append(f"{where}: {target} has no section {missing}")
    return broken


def test_every_cited_document_and_section_is_in_the_repository():
    broken = [line for line in broken_citations(ROOT) if not line.startswith(f"{THIS_FILE}:")]
    assert not broken, "\n".join(broken)


def test_a_citation_of_a_missing_or_outside_file_or_section_is_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "GUIDE.md").write_text("# Guide\n\n## Layers\n\nSee [the API](API.md#errors).\n")
    (tmp_path / "docs" / "API.md").write_text("# API\n\n## Errors\n")
    (tmp_path / "app.py").write_text(
        '"""Rules (docs/GUIDE.md, "Layers"); the API (API.md).\n\n'
        "Style: STYLE.md; the founding design: /work/shared/DESIGN.md and ../DESIGN.md.\n"
        'Sections: docs/GUIDE.md, "Nowhere"; API.md#missing."""\n'
    )
    assert broken_citations(tmp_path) == [
        "app.py:3: STYLE.md is not a file of the repository",
        "app.py:3: /work/shared/DESIGN.md is not a file of the repository",
        "app.py:3: ../DESIGN.md is not a file of the repository",
        'app.py:4: docs/GUIDE.md has no section "Nowhere"',
        "app.py:4: API.md has no section #missing",
    ]
