"""erase_user, export_user and reapply_erasures from a shell."""
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from sessions_app import selectors as session_selectors
from userdata_app import selectors as userdata_selectors
from userdata_app.models import ErasedSubject, ErasureRequest
from tests.userdata_app.erasure_factories import subject_data_create, subject_data_restored


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
    assert session_selectors.subject_process_state_counts(tenant=alice, user_id="alice")["messages"] == 2
    assert not ErasureRequest.objects.exists()


def test_erase_user_executes_and_prints_a_receipt_without_the_user_id(alice, other_tenant):
    out = run("erase_user", "--subject", "acme:alice", "--scope", "everything", "--requested-by", "ticket 9")
    receipt = json.loads(out)
    assert receipt["counts"]["sessions"] == 1 and "alice" not in out
    assert session_selectors.subject_process_state_counts(tenant=alice, user_id="alice")["sessions"] == 0
    assert userdata_selectors.subject_user_data_count(tenant=other_tenant, user_id="alice") == 2
    assert ErasureRequest.objects.get().status == ErasureRequest.Status.EXECUTED


def test_commands_refuse_bad_subjects(alice):
    for bad in ("acme", "nope:alice", "acme:a/b"):
        with pytest.raises(CommandError):
            run("erase_user", "--subject", bad)
    with pytest.raises(CommandError):
        run("erase_user", "--subject", "acme:alice", "--operator", "nobody")


def test_export_user_writes_one_json_document(alice, tmp_path):
    target = tmp_path / "alice.json"
    call_command("export_user", "--subject", "acme:alice", "--subject", "globex:alice", "--output", str(target), stderr=None)
    document = json.loads(target.read_text())
    assert [s["tenant"] for s in document["subjects"]] == ["acme", "globex"]
    assert len(document["subjects"][0]["sessions"][0]["messages"]) == 2


def test_reapply_after_restoring_an_older_backup_with_a_saved_registry(alice, tmp_path):
    run("erase_user", "--subject", "acme:alice", "--scope", "everything")
    saved = tmp_path / "registry.json"
    run("reapply_erasures", "--save-registry", str(saved))
    # The restored backup predates the erasure: the data is back and the registry row is not.
    erased_at = ErasedSubject.objects.get().erased_at
    ErasedSubject.objects.all().delete()
    subject_data_restored(tenant=alice, user_id="alice", before=erased_at, sessions=1, messages=2)

    assert json.loads(run("reapply_erasures", "--dry-run"))["subjects_matched"] == 0
    out = run("reapply_erasures", "--registry-file", str(saved))
    summary = json.loads(out[out.index("{"):])
    assert summary["subjects_matched"] == 1 and summary["erased_messages"] == 2
    assert session_selectors.subject_process_state_counts(tenant=alice, user_id="alice")["sessions"] == 0
    assert ErasedSubject.objects.get().grace_until > timezone.now() - timedelta(days=2)


def test_reapply_refuses_a_file_that_is_not_a_registry(db, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"subject_hash": "x"}]')
    with pytest.raises(CommandError):
        run("reapply_erasures", "--registry-file", str(bad))
