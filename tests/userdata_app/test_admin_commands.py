"""The staff commands take a user id exactly as typed: `--subject acme:alice\\u00a0` is not alice."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.subjects import held, process_state_held
from tests.userdata_app.erasure_factories import subject_data_create
from userdata_app.erasure.registry import subject_hash

NBSP = "\u00a0"


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def lookalikes(tenant):
    for user_id in ("alice", "alice" + NBSP, " bob", "bob", "x\u2003", "x", "a:b"):
        subject_data_create(tenant=tenant, user_id=user_id, sessions=1, messages=2)
    return tenant


def messages(tenant, user_id):
    return process_state_held(tenant=tenant, user_id=user_id)["messages"]


@pytest.mark.parametrize("user_id, bystander", [("alice" + NBSP, "alice"), (" bob", "bob"), ("x\u2003", "x")])
def test_erase_user_erases_exactly_the_id_typed(lookalikes, user_id, bystander):
    receipt = json.loads(run("erase_user", "--subject", f"acme:{user_id}", "--scope", "everything", "--yes"))
    assert receipt["counts"]["messages"] == 2 and receipt["counts"]["user_data"] == 2
    [entry] = receipt["subjects"]
    assert entry["hmac_sha256"] == subject_hash(tenant_slug="acme", user_id=user_id)[1]
    assert messages(lookalikes, user_id) == 0
    assert messages(lookalikes, bystander) == 2
    assert held(tenant=lookalikes, user_id=bystander)["user_data"] == 2


def test_a_user_id_may_hold_a_colon(lookalikes):
    """Only the first colon separates the tenant slug."""
    run("erase_user", "--subject", "acme:a:b", "--scope", "everything", "--yes")
    assert messages(lookalikes, "a:b") == 0


@pytest.mark.parametrize("user_id", ["alice" + NBSP, " bob", "x\u2003"])
def test_export_user_exports_exactly_the_id_typed(lookalikes, user_id):
    document = json.loads(run("export_user", "--subject", f"acme:{user_id}"))
    [subject] = document["subjects"]
    assert subject["user_id"] == user_id
    assert {d["key"]: d["value"] for d in subject["user_data"]}["email"] == f"{user_id}@example.com"


@pytest.mark.parametrize("bad", ["acme:", "acme:a/b", "acme:a\x00b", "acme:" + "x" * 129])
def test_commands_refuse_what_the_api_refuses(lookalikes, bad):
    for command in ("erase_user", "export_user"):
        with pytest.raises(CommandError, match="--subject: USER_ID"):
            run(command, "--subject", bad)
