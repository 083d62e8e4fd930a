"""docs/CLIENT.md's five-line agent example runs as written, and the README shows the same one."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "CLIENT.md"
EXAMPLE = re.compile(r"```python\n(from agentstate.client import AgentStateClient\n.*?)```", re.S)


@pytest.mark.django_db(transaction=True)
def test_the_five_line_agent_example_runs_and_runs_again(live_server, agent_key, capsys):
    example = EXAMPLE.search(DOC.read_text()).group(1)
    code = example.replace("http://127.0.0.1:8000", live_server.url).replace("<your key>", agent_key)
    for _ in range(2):  # a reader runs it twice: the second run must not hit its first run's session
        exec(compile(code, str(DOC), "exec"), {})  # noqa: S102 (runs the documentation's own example, as a reader would)
        # Compared as a dict: PostgreSQL's jsonb does not keep the order of an object's keys.
        assert ast.literal_eval(capsys.readouterr().out.strip()) == {"step": 1, "plan": ["greet"]}


def test_the_readme_shows_the_same_example():
    assert EXAMPLE.search((ROOT / "README.md").read_text()).group(1) == EXAMPLE.search(DOC.read_text()).group(1)
