"""What every document of the repository holds to: one line budget each, set here and nowhere else,
and no word of how the work on it was organised (its sessions and their "stops"). The docs describe
the project as it is, for its users and maintainers; how it got there is in git."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The one place the budgets live: lines per Markdown document, relative to the repository root.
LINE_BUDGETS = {"docs/PERFORMANCE.md": 500, "README.md": 300}
DEFAULT_LINE_BUDGET = 650  # every other document

SKIPPED_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", "staticfiles"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".json", ".html", ".yaml", ".yml", ".cfg", ".ini", ".txt", ".lua", ".sh"}
SCRIPT_DIRS = {".ci"}  # shell scripts without a suffix

# Talk of work sessions: "Stop 39:", "stop 40, run 1", "the last stop", "this stop's code", "work
# session". Not "stop the server", "stops 2 s later" or "this stops the cluster".
SESSION_TALK = re.compile(
    r"\bstops? \d+\b(?!\s*(?:s|ms|seconds?|minutes?|%|times)\b)"
    r"|\b(?:last|this|that|next|previous|earlier|later|each|every|same) stop\b"
    r"|\bwork(?:ing)? sessions?\b",
    re.IGNORECASE,
)


def _files(suffixes: set[str]):
    for folder, dirs, names in os.walk(ROOT):
        here = Path(folder)
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith((".egg-info", "_cache"))]
        in_script_dir = here != ROOT and here.relative_to(ROOT).parts[0] in SCRIPT_DIRS
        for name in names:
            path = here / name
            if path.suffix in suffixes or in_script_dir:
                yield path


def documents() -> list[Path]:
    return sorted(_files({".md"}))


def line_budget(document: Path) -> int:
    return LINE_BUDGETS.get(document.relative_to(ROOT).as_posix(), DEFAULT_LINE_BUDGET)


def test_every_document_keeps_within_its_line_budget():
    over = [
        f"{path.relative_to(ROOT)}: {lines} lines, budget {line_budget(path)}"
        for path in documents()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > line_budget(path)
    ]
    assert not over, "over budget (say it shorter, or leave history to git):\n" + "\n".join(over)


def test_every_budget_names_a_document():
    assert all((ROOT / name).is_file() for name in LINE_BUDGETS), LINE_BUDGETS


def _may_talk(text: str) -> bool:
    """Whether ``text`` holds a word every match holds: a fast test before the slow pattern."""
    lowered = text.lower()
    return "stop" in lowered or "work session" in lowered or "working session" in lowered


def session_talk(text: str) -> list[str]:
    return [match[0] for match in SESSION_TALK.finditer(text)] if _may_talk(text) else []


def test_nothing_in_the_repository_speaks_of_work_sessions():
    """Docs, code and its comments, tests, scripts and the kept benchmark runs' notes
    (benchmarks/results/*.json, copied into docs/PERFORMANCE.md's generated sections)."""
    this_file = Path(__file__).resolve()
    texts = ((path, path.read_text(encoding="utf-8", errors="replace")) for path in _files(TEXT_SUFFIXES))
    found = [
        f"{path.relative_to(ROOT)}:{number}: {', '.join(talk)}"
        for path, text in texts
        if path.resolve() != this_file and _may_talk(text)
        for number, line in enumerate(text.splitlines(), start=1)
        if (talk := session_talk(line))
    ]
    assert not found, "say what the project is, not which session changed it:\n" + "\n".join(found)


def test_the_pattern_finds_session_talk_and_leaves_ordinary_stops_alone():
    assert session_talk("### Stop 39: reads written out") == ["Stop 39"]
    assert session_talk('"note": "main at b071ee5, 2026-11-26 stop 40, run 1"') == ["stop 40"]
    assert session_talk("In the last stop's runs at load 6") == ["last stop"]
    assert session_talk("from three quiet runs of this stop's code") == ["this stop"]
    assert session_talk("Never mention work sessions") == ["work sessions"]
    for ordinary in (
        "stop the server first",
        "the replica stops 2 s later",
        "this stops the cluster",
        "python -m tools.pgcluster stop DIR",
        "a stop sequence of 3",
        "the agent's session 0.5-0.75 s at",
    ):
        assert session_talk(ordinary) == [], ordinary
