"""What the commands tell a person who asks them for help (issue 15, item 12)."""

import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent


def _help(command: str) -> str:
    out = StringIO()
    with pytest.raises(SystemExit):
        call_command(command, "--help", stdout=out)
    return out.getvalue()


def test_create_api_key_says_what_each_scope_allows(capsys):
    _help("create_api_key")
    text = " ".join(capsys.readouterr().out.split())
    assert "agent (default): sessions, state and user data" in text
    assert "compliance: also erasure and subject exports" in text


def test_quickstart_explains_its_address_argument(capsys):
    _help("quickstart")
    assert "Address and port the development server listens on" in " ".join(capsys.readouterr().out.split())


@pytest.mark.django_db
def test_quickstart_says_how_to_change_an_unchanged_password(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "ops")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "first-Passw0rd")
    call_command("quickstart", "--no-serve", stdout=StringIO())
    monkeypatch.delenv("DJANGO_SUPERUSER_PASSWORD")
    out = StringIO()
    call_command("quickstart", "--no-serve", stdout=out)
    assert "set DJANGO_SUPERUSER_PASSWORD" in out.getvalue() and "changepassword ops" in out.getvalue()


@pytest.mark.servers  # runs in a fresh process
def test_benchmarks_help_lists_the_suites_and_the_default():
    text = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    suites = re.search(r"\[\{([\w,-]+)\}\]", text)[1].split(",")
    assert {"scaling", "http", "erasure", "all", "summary"} <= set(suites)
    # Each suite is explained in the text below the options.
    assert all(suite in text.split("which suite to run", 1)[1] for suite in suites)
    assert "default: scaling" in " ".join(text.split())


@pytest.mark.servers  # runs in a fresh process
def test_benchmarks_summary_without_results_says_so_and_fails(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "summary", "--results", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1 and "No benchmark results" in run.stderr
