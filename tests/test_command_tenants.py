"""A command given a tenant that does not exist says how to make one (issue 41, finding 15): every
project command that takes ``--tenant`` or ``--subject TENANT:USER_ID`` is enumerated, and each one
that needs an existing tenant names ``create_api_key``, the command that creates it."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command, get_commands, load_command_class

pytestmark = pytest.mark.django_db

# The arguments besides the unknown tenant each command needs to get as far as looking it up.
NEEDS_A_TENANT = {
    "import_sessions": ["--tenant", "nowhere", "--from", "adk-sqlite", "/nonexistent/adk.db"],
    "apply_retention": ["--tenant", "nowhere", "--dry-run"],
    "export_tenant": ["--tenant", "nowhere"],
    "erase_user": ["--subject", "nowhere:alice", "--yes"],
    "export_user": ["--subject", "nowhere:alice"],
}
# Commands that take a tenant and do not need it to exist, and why.
TENANT_OPTIONAL = {
    "create_api_key": "creates the tenant with its first key",
    "import_tenant": "creates the tenant it imports into",
    "verify_access_log": "verifies a chain by its slug, also one of a deleted tenant",
}


def project_commands_taking_a_tenant() -> set[str]:
    names = set()
    for name, app in get_commands().items():
        if app.startswith(("django", "rest_framework", "drf_spectacular")):
            continue
        parser = load_command_class(app, name).create_parser("manage.py", name)
        if {"--tenant", "--subject"} & {option for action in parser._actions for option in action.option_strings}:
            names.add(name)
    return names


def test_every_command_taking_a_tenant_is_decided():
    assert project_commands_taking_a_tenant() == set(NEEDS_A_TENANT) | set(TENANT_OPTIONAL)


@pytest.mark.parametrize(
    "command",
    # import_sessions reads ADK's store
    [
        pytest.param(c, marks=pytest.mark.needs_backends("adk")) if c == "import_sessions" else c
        for c in sorted(NEEDS_A_TENANT)
    ],
)
def test_an_unknown_tenant_is_answered_with_the_command_that_creates_it(command):
    with pytest.raises(CommandError) as raised:
        call_command(command, *NEEDS_A_TENANT[command], stdout=StringIO(), stderr=StringIO())

    message = str(raised.value)
    assert "no tenant 'nowhere'" in message
    assert "manage.py create_api_key --tenant nowhere --name" in message
