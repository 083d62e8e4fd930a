"""docs/SCALING.md's recipe is what CI builds: .ci/multinode runs every step of the page (taken from
it by tools/recipe.py, never copied), and sets every value the steps read, which the page's site
block names for a reader. So neither can change without the other."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools.recipe import SCALING, SITE, recipe_steps

ROOT = Path(__file__).resolve().parent.parent
MULTINODE = (ROOT / ".ci" / "multinode").read_text()
STEPS = recipe_steps(SCALING.read_text())
VARIABLE = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)")
ASSIGNED = re.compile(r"(?:^|\s|export\s)([A-Z][A-Z0-9_]*)=", re.MULTILINE)


def used(text: str) -> set[str]:
    return set(VARIABLE.findall(text))


def test_every_step_of_the_page_is_run_by_ci_in_the_pages_order():
    run = re.findall(r"^\s*(?:\S+=\S+ )*recipe ([a-z0-9-]+)", MULTINODE, re.MULTILINE)
    assert run == [name for name in STEPS if name != SITE]
    assert {"primary", "pgbouncer", "replica", "app", "deploy", "proxy-cert", "proxy"} <= set(run)


def test_every_value_a_step_reads_is_named_by_the_site_block_and_set_by_ci():
    read = set().union(*(used(body) for name, body in STEPS.items() if name != SITE))
    read -= {
        name for body in STEPS.values() for name in ASSIGNED.findall(body) if name not in ASSIGNED.findall(STEPS[SITE])
    }
    assert read == set(ASSIGNED.findall(STEPS[SITE]))
    assert read <= set(ASSIGNED.findall(MULTINODE)), read - set(ASSIGNED.findall(MULTINODE))


def test_the_command_prints_a_step_as_written_and_refuses_an_unknown_one():
    command = [sys.executable, "-m", "tools.recipe"]
    printed = subprocess.run([*command, "deploy"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert printed.stdout == STEPS["deploy"] and "agentstate migrate" in printed.stdout
    listed = subprocess.run([*command, "--list"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert listed.stdout.split() == list(STEPS)
    unknown = subprocess.run([*command, "nope"], cwd=ROOT, capture_output=True, text=True)
    assert unknown.returncode != 0 and "no step 'nope'" in unknown.stderr


def test_a_step_named_twice_is_refused():
    block = "```sh recipe:twice\necho\n```\n"
    with pytest.raises(ValueError, match="twice"):
        recipe_steps(block + block)
