"""erase_user, export_user and reapply_erasures from a shell."""

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from tests.subjects import held, process_state_held
from tests.userdata_app.erasure_factories import subject_data_create, subject_data_restored
from userdata_app.models import ErasedSubject, ErasureRequest


def run(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def alice(tenant, other_tenant):
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=2)
    subject_data_create(tenant=other_tenant, user_id="alice", sessions=1, messages=2)
    return tenant


def test_erase_user_dry_run_prints_the_preview_and_changes_nothing(alice):
    out = json.loads(run("erase_user", "--subject", "acme:alice", "--scope", "everything", "--dry-run"))
    assert out["would_erase"]["messages"] == 2 and out["would_erase"]["user_data"] == 2
    assert process_state_held(tenant=alice, user_id="alice")["messages"] == 2
    assert not ErasureRequest.objects.exists()


def test_erase_user_dry_run_for_an_unknown_user_says_so_and_exits_3(alice):
    with pytest.raises(CommandError, match=r"Nothing is held in this scope about acme:alicia") as caught:
        run("erase_user", "--subject", "acme:alice", "--subject", "acme:alicia", "--dry-run")

    assert caught.value.returncode == 3


def test_erase_user_refuses_a_user_id_with_a_stray_space_that_holds_nothing(alice):
    with pytest.raises(CommandError, match=r"begins or ends with a space and nothing is held under it"):
        run("erase_user", "--subject", "acme:alice ", "--yes")

    assert not ErasureRequest.objects.exists()
    assert held(tenant=alice, user_id="alice")["user_data"] == 2


def test_erase_user_executes_and_prints_a_receipt_without_the_user_id(alice, other_tenant):
    out = run("erase_user", "--subject", "acme:alice", "--scope", "everything", "--requested-by", "ticket 9", "--yes")
    receipt = json.loads(out)
    assert receipt["counts"]["sessions"] == 1 and "alice" not in out
    assert process_state_held(tenant=alice, user_id="alice")["sessions"] == 0
    assert held(tenant=other_tenant, user_id="alice")["user_data"] == 2
    assert ErasureRequest.objects.get().status == ErasureRequest.Status.EXECUTED


def test_commands_refuse_bad_subjects(alice):
    for bad in ("acme", "nope:alice", "acme:a/b"):
        with pytest.raises(CommandError):
            run("erase_user", "--subject", bad)
    with pytest.raises(CommandError):
        run("erase_user", "--subject", "acme:alice", "--operator", "nobody")


def test_export_user_writes_one_json_document(alice, tmp_path):
    target = tmp_path / "alice.json"
    call_command(
        "export_user", "--subject", "acme:alice", "--subject", "globex:alice", "--output", str(target), stderr=None
    )
    document = json.loads(target.read_text())
    assert [s["tenant"] for s in document["subjects"]] == ["acme", "globex"]
    assert len(document["subjects"][0]["sessions"][0]["messages"]) == 2


def test_export_user_writes_the_portable_format_for_one_person(alice, tmp_path):
    target = tmp_path / "alice.jsonl"
    call_command("export_user", "--subject", "acme:alice", "--portable", "--output", str(target), stderr=None)
    header, *records = (json.loads(line) for line in target.read_text().splitlines())
    assert (header["scope"], header["tenant"], header["user_id"]) == ("subject", "acme", "alice")
    assert sum(r["record"] == "message" for r in records) == 2
    with pytest.raises(CommandError, match="one --subject"):
        run("export_user", "--subject", "acme:alice", "--subject", "globex:alice", "--portable")


def test_reapply_after_restoring_an_older_backup_with_a_saved_registry(alice, tmp_path):
    run("erase_user", "--subject", "acme:alice", "--scope", "everything", "--yes")
    saved = tmp_path / "registry.json"
    run("reapply_erasures", "--save-registry", str(saved))
    # The restored backup predates the erasure: the data is back and the registry row is not.
    erased_at = ErasedSubject.objects.get().erased_at
    ErasedSubject.objects.all().delete()
    subject_data_restored(tenant=alice, user_id="alice", before=erased_at, sessions=1, messages=2)

    assert json.loads(run("reapply_erasures", "--dry-run"))["subjects_matched"] == 0
    out = run("reapply_erasures", "--registry-file", str(saved))
    summary = json.loads(out[out.index("{") :])
    assert summary["subjects_matched"] == 1 and summary["erased_messages"] == 2
    assert process_state_held(tenant=alice, user_id="alice")["sessions"] == 0
    assert ErasedSubject.objects.get().grace_until > timezone.now() - timedelta(days=2)


def test_reapply_refuses_a_file_that_is_not_a_registry(db, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"subject_hash": "x"}]')
    with pytest.raises(CommandError):
        run("reapply_erasures", "--registry-file", str(bad))


class Terminal:
    """A terminal on stdin with the operator's answer typed in."""

    def __init__(self, answer: str):
        self.answer = answer

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.answer + "\n"


def messages_of(tenant, user_id="alice") -> int:
    return process_state_held(tenant=tenant, user_id=user_id)["messages"]


def test_erase_user_shows_what_will_go_and_erases_only_on_yes(alice, monkeypatch):
    monkeypatch.setattr("sys.stdin", Terminal("no"))
    with pytest.raises(CommandError, match="Not confirmed: nothing erased"):
        run("erase_user", "--subject", "acme:alice\u00a0", "--subject", "acme:alice", "--scope", "everything")
    assert messages_of(alice) == 2 and not ErasureRequest.objects.exists()

    from io import StringIO

    monkeypatch.setattr("sys.stdin", Terminal("yes"))
    out = StringIO()
    call_command("erase_user", "--subject", "acme:alice", "--scope", "everything", stdout=out, stderr=StringIO())
    shown = out.getvalue()
    prompt, receipt = shown[: shown.index("{")], json.loads(shown[shown.index("{") :])
    assert "tenant acme, user id alice (5 characters)" in prompt
    assert "user data: 2" in prompt and "messages: 2" in prompt and "working state: 1" in prompt
    assert 'Type "yes" to erase' in prompt
    assert receipt["counts"]["messages"] == 2 and messages_of(alice) == 0


def test_erase_user_spells_out_an_id_before_asking(alice, monkeypatch):
    subject_data_create(tenant=alice, user_id="alice\u00a0", sessions=1, messages=1)
    monkeypatch.setattr("sys.stdin", Terminal(""))
    from io import StringIO

    out = StringIO()
    with pytest.raises(CommandError):
        call_command("erase_user", "--subject", "acme:alice\u00a0", stdout=out, stderr=StringIO())
    assert "user id alice⟦U+00A0⟧ (6 characters)" in out.getvalue()
    assert messages_of(alice, "alice\u00a0") == 1


def test_erase_user_without_a_terminal_refuses_unless_told_yes(alice):
    with pytest.raises(CommandError, match="--yes"):  # pytest's stdin is no terminal
        run("erase_user", "--subject", "acme:alice", "--scope", "everything")
    assert messages_of(alice) == 2 and not ErasureRequest.objects.exists()
    json.loads(run("erase_user", "--subject", "acme:alice", "--scope", "everything", "--no-input"))
    assert messages_of(alice) == 0


@pytest.mark.django_db(transaction=True)
def test_erasure_storage_cleanup_says_only_what_is_true_of_the_databases_files(alice):
    """On PostgreSQL the erased rows stay as dead tuples and in the WAL (docs/COMPLIANCE.md): the
    command must not say the log holds no copy of them."""
    from django.db import connection

    run("erase_user", "--subject", "acme:alice", "--yes")
    done = run("erasure_storage_cleanup", "--timeout", "5")
    if connection.vendor == "postgresql":
        assert "no copy" not in done and "dead tuples until VACUUM" in done and "write-ahead log" in done
    else:
        assert done.startswith("Done: no copy of erased rows is left in the write-ahead log")
