"""The serve command of the README: migrated, cache table made, admin login printed or from env."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.cache import cache
from django.core.management import call_command


def _quickstart(monkeypatch, **env) -> str:
    for name in ("DJANGO_SUPERUSER_USERNAME", "DJANGO_SUPERUSER_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = StringIO()
    call_command("quickstart", "--no-serve", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_prints_a_generated_admin_login_that_works(monkeypatch):
    output = _quickstart(monkeypatch)
    line = next(line for line in output.splitlines() if line.startswith("Admin login:"))
    username, password = line.removeprefix("Admin login: ").split("  ->")[0].split(" / ")
    user = authenticate(username=username, password=password)
    assert user is not None and user.is_superuser and user.is_staff
    cache.set("quickstart-probe", 1)  # the cache table exists
    assert cache.get("quickstart-probe") == 1


@pytest.mark.django_db
def test_takes_the_login_from_the_environment_and_keeps_it_on_rerun(monkeypatch):
    output = _quickstart(monkeypatch, DJANGO_SUPERUSER_USERNAME="ops", DJANGO_SUPERUSER_PASSWORD="s3cret-Passw0rd")
    assert "s3cret" not in output
    assert authenticate(username="ops", password="s3cret-Passw0rd") is not None
    rerun = _quickstart(monkeypatch, DJANGO_SUPERUSER_USERNAME="ops")
    assert "password unchanged" in rerun
    assert authenticate(username="ops", password="s3cret-Passw0rd") is not None


@pytest.mark.django_db
def test_an_empty_username_variable_means_the_default_admin(monkeypatch):
    """DJANGO_SUPERUSER_USERNAME= (set, empty) crashed with "The given username must be set"."""
    output = _quickstart(monkeypatch, DJANGO_SUPERUSER_USERNAME="")
    assert output.startswith("Admin login: admin / ")
