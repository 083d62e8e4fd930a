"""The README's promises that a new user relies on."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(python3\.11 [^\n]+)\n```", setup)


def test_readme_shows_exactly_two_setup_commands():
    commands = _readme_commands()
    assert len(commands) == 2, commands
    assert "quickstart" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_word_for_word():
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"TEST_COMMAND='{_readme_commands()[1]}'" in ci
