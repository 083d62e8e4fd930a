"""The core runs with any subset of the framework backends (settings only: AGENTSTATE_BACKENDS):
each installed backend is registered once, the system checks pass, and a backend left out has no
API. .ci/run runs the smoke set (marker ``any_backends``) with each backend left out."""

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


@pytest.mark.parametrize(
    "prefix,backend",
    [("/api/v1/adk/apps/a/users/u/sessions", "adk"), ("/api/v1/langgraph/threads/t/checkpoints/", "langgraph")],
)
def test_a_backend_left_out_has_no_api(api, prefix, backend):
    if backend in settings.BACKENDS_INSTALLED:
        pytest.skip(f"{backend} is installed")
    response = api.get(prefix)
    assert response.status_code == 404
    assert response.json()["error"]
