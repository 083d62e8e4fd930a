"""docs/CLIENT.md's five-line agent example (copied into the README) runs as written."""
import ast
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "CLIENT.md"


@pytest.mark.django_db(transaction=True)
def test_the_five_line_agent_example_runs(live_server, agent_key, capsys):
    example = re.search(r"## A five-line agent\n+```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    code = example.replace("http://127.0.0.1:8000", live_server.url).replace("<your key>", agent_key)
    exec(compile(code, str(DOC), "exec"), {})
    # Compared as a dict: PostgreSQL's jsonb does not keep the order of an object's keys.
    assert ast.literal_eval(capsys.readouterr().out.strip()) == {"step": 1, "plan": ["greet"]}
