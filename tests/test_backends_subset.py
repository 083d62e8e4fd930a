"""The core runs with any subset of the framework backends (settings only: AGENTSTATE_BACKENDS):
each installed backend is registered once, the system checks pass, and a backend left out has no
API. .ci/run runs the smoke set (marker ``any_backends``) with each backend left out."""

import os
import subprocess
import sys

import pytest
from django.apps import apps
from django.conf import settings
from django.core.management import call_command

from sessions_app.backends import backends


def test_the_system_checks_pass():
    call_command("check", fail_level="WARNING")


def test_each_installed_backend_registers_itself_once():
    installed = [name for name, app in settings.BACKENDS.items() if apps.is_installed(app)]
    assert sorted(installed) == sorted(settings.BACKENDS_INSTALLED)
    assert len(backends()) == len(installed)


# An API mount of each backend (the names stay out of the test's id: conftest.py skips a test whose
# id names a left-out backend).
MOUNTS = {"adk": "/api/v1/adk/apps/a/users/u/sessions", "langgraph": "/api/v1/langgraph/threads/t/checkpoints/"}


def test_a_backend_left_out_has_no_api(api):
    left_out = set(MOUNTS) - set(settings.BACKENDS_INSTALLED)
    if not left_out:
        pytest.skip("every backend with an API is installed")
    for backend in left_out:
        response = api.get(MOUNTS[backend])
        assert response.status_code == 404
        assert response.json()["error"]


@pytest.mark.servers  # a pytest of its own: seconds to collect
def test_a_test_needing_a_left_out_backend_skips_naming_it():
    """conftest.py's rule, by what a test imports or what its id names: with LangGraph left out, a
    module importing it and a test_langgraph_* file skip, and the run collects without an error."""
    files = ["tests/api/test_langgraph_msgpack.py", "tests/integrations/test_langgraph_retention.py"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:randomly", "-q", "-rs", *files],
        cwd=settings.BASE_DIR,
        env={**os.environ, "AGENTSTATE_BACKENDS": "adk,openai_agents"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    summary = result.stdout.strip().splitlines()
    assert "passed" not in summary[-1] and "error" not in summary[-1] and "skipped" in summary[-1]
    skips = [line for line in summary if line.startswith("SKIPPED")]
    assert skips and all("needs the langgraph backend, which AGENTSTATE_BACKENDS leaves out" in s for s in skips)
