"""The erasure workflow's services: scopes, isolation, residue, receipt, admin log, grace period."""

import hashlib
import hmac
import json
from datetime import UTC, date, datetime, timedelta

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agentstate import subject_data
from agentstate.exceptions import Conflict, InvalidInput, NotFound, SubjectErased
from agentstate.subjects import USER_DATA
from sessions_app import selectors as session_selectors
from sessions_app import services as session_services
from sessions_app.models import Message, Session
from tests.subjects import held
from tests.userdata_app.erasure_factories import SUBJECT_DATA_COUNTS as FULL
from tests.userdata_app.erasure_factories import subject_data_create, subject_data_restored, verified_request
from userdata_app import erasure
from userdata_app import selectors as userdata_selectors
from userdata_app import services as userdata_services
from userdata_app.models import ErasedSubject, ErasureEvent, ErasureReceipt, ErasureRequest, ErasureSubject, UserDatum

Scope = ErasureRequest.Scope
Status = ErasureRequest.Status


def holdings(tenant, user_id):
    return held(tenant=tenant, user_id=user_id)


@pytest.fixture
def officer(db):
    return get_user_model().objects.create_user("officer", is_staff=True)


@pytest.fixture
def world(tenant, other_tenant):
    """alice in acme (the subject), bob in acme, and another alice in globex."""
    for t, user in ((tenant, "alice"), (tenant, "bob"), (other_tenant, "alice")):
        subject_data_create(tenant=t, user_id=user)
    return tenant, other_tenant


USER_DATA_ONLY = {"user_data": 2, "adk_user_state": 0, "memories": 1, "artifacts": 1}


@pytest.mark.needs_backends("adk")
def test_user_data_scope_erases_user_data_only_and_keeps_process_state(world, officer):
    acme, globex = world
    request = verified_request(subjects=[(acme, "alice")], scope=Scope.USER_DATA, actor=officer)
    assert erasure.erasure_preview(request=request) == USER_DATA_ONLY

    receipt = erasure.erasure_execute(request=request, actor=officer)

    assert receipt.counts == USER_DATA_ONLY
    assert holdings(acme, "alice") == {**FULL, "user_data": 0, "memories": 0, "artifacts": 0}  # process state kept
    assert holdings(acme, "bob") == FULL
    assert holdings(globex, "alice") == FULL
    request.refresh_from_db()
    assert request.status == Status.EXECUTED


def test_everything_scope_erases_all_the_subject_holds_and_nothing_else(
    world, officer, django_capture_on_commit_callbacks
):
    acme, globex = world
    session_pk = session_selectors.session_get(tenant=acme, user_id="alice", session_id="s0").pk
    request = verified_request(subjects=[(acme, "alice")], scope=Scope.EVERYTHING, actor=officer)
    assert erasure.erasure_preview(request=request) == FULL

    with django_capture_on_commit_callbacks(execute=True):  # working state goes once the erasure commits
        receipt = erasure.erasure_execute(request=request, actor=officer)

    assert receipt.counts == FULL
    assert holdings(acme, "alice") == dict.fromkeys(FULL, 0)
    assert holdings(acme, "bob") == FULL
    assert holdings(globex, "alice") == FULL
    from sessions_app import working_state

    assert working_state.get_store().get(session_pk) == {}


def test_one_person_with_ids_in_two_tenants(world, officer):
    acme, globex = world
    request = verified_request(subjects=[(acme, "alice"), (globex, "alice")], scope=Scope.EVERYTHING, actor=officer)
    receipt = erasure.erasure_execute(request=request, actor=officer)
    assert receipt.counts == {category: 2 * n for category, n in FULL.items()}
    assert holdings(globex, "alice") == dict.fromkeys(FULL, 0)
    assert holdings(acme, "bob") == FULL
    assert len(receipt.subjects) == 2


def test_receipt_keeps_keyed_hashes_and_no_plain_subject_id(world, officer, settings):
    acme, _ = world
    settings.ERASURE_HMAC_KEYS = {"k1": "old-secret-0123456789", "k2": "new-secret-0123456789"}
    settings.ERASURE_HMAC_KEY_ID = "k2"
    request = verified_request(subjects=[(acme, "alice")], scope=Scope.USER_DATA, actor=officer)
    receipt = erasure.erasure_execute(request=request, actor=officer)

    expected = hmac.new(b"new-secret-0123456789", b'["acme","alice"]', hashlib.sha256).hexdigest()
    assert receipt.subjects == [{"tenant": "acme", "key_id": "k2", "hmac_sha256": expected}]
    assert receipt.executed_by == officer and receipt.executed_by_name == "officer"
    document = json.dumps(erasure.receipt_document(receipt=receipt))
    assert "alice" not in document
    subject = ErasureSubject.objects.get(request=request)
    assert subject.user_id == "" and subject.subject_hash == expected and subject.hash_key_id == "k2"
    assert not ErasureSubject.objects.filter(user_id="alice").exists()
    assert ErasedSubject.objects.filter(subject_hash=expected, key_id="k2").exists()


def test_rerunning_an_executed_request_is_a_no_op(world, officer):
    acme, _ = world
    request = verified_request(subjects=[(acme, "alice")], scope=Scope.USER_DATA, actor=officer)
    receipt = erasure.erasure_execute(request=request, actor=officer)
    events = ErasureEvent.objects.count()
    assert erasure.erasure_execute(request=request, actor=officer) == receipt
    assert ErasureEvent.objects.count() == events
    assert ErasureReceipt.objects.count() == 1


def test_only_verified_requests_execute(world, officer):
    acme, _ = world
    request = erasure.erasure_request_create(subjects=[(acme, "alice")], scope=Scope.EVERYTHING, actor=officer)
    with pytest.raises(Conflict):
        erasure.erasure_execute(request=request, actor=officer)
    assert holdings(acme, "alice") == FULL


def test_residue_rolls_everything_back_and_marks_the_request_failed(world, officer, monkeypatch):
    acme, _ = world
    request = verified_request(subjects=[(acme, "alice")], scope=Scope.EVERYTHING, actor=officer)
    # An eraser that leaves process state behind: the residue check must catch it.
    erase = subject_data.subject_erase
    monkeypatch.setattr(
        erasure.execution.subject_data, "subject_erase", lambda **kw: erase(**{**kw, "kinds": [USER_DATA]})
    )

    with pytest.raises(erasure.ErasureFailed):
        erasure.erasure_execute(request=request, actor=officer)

    request.refresh_from_db()
    assert request.status == Status.FAILED
    assert "messages" in request.failure
    assert holdings(acme, "alice") == FULL  # the user data deletion was rolled back too
    assert ErasureSubject.objects.get(request=request).user_id == "alice"
    assert not ErasureReceipt.objects.exists() and not ErasedSubject.objects.exists()

    monkeypatch.undo()
    receipt = erasure.erasure_execute(request=request, actor=officer)  # a failed request can be retried
    assert receipt.counts == FULL


def test_admin_log_entries_about_erased_objects_are_scrubbed(world, officer):
    acme, _ = world
    alice_session = session_selectors.session_get(tenant=acme, user_id="alice", session_id="s0")
    bob_session = session_selectors.session_get(tenant=acme, user_id="bob", session_id="s0")
    datum = userdata_selectors.user_datum_get(tenant=acme, user_id="alice", key="email")

    def log(obj):
        return LogEntry.objects.create(
            user=officer,
            content_type=ContentType.objects.get_for_model(obj),
            object_id=str(obj.pk),
            object_repr=f"about alice {obj.pk}",
            action_flag=CHANGE,
            change_message="alice@example.com changed",
        )

    entries = [log(alice_session), log(datum)]
    kept = log(bob_session)
    request = verified_request(subjects=[(acme, "alice")], scope=Scope.EVERYTHING, actor=officer)
    erasure.erasure_execute(request=request, actor=officer)

    for entry in entries:
        entry.refresh_from_db()
        assert entry.object_repr == erasure.ERASED_REPR and entry.change_message == ""
    kept.refresh_from_db()
    assert kept.object_repr.startswith("about alice")


def test_erasure_runs_a_bounded_number_of_statements(tenant, other_tenant, officer):
    subject_data_create(tenant=tenant, user_id="warm-up", sessions=1, messages=2)
    subject_data_create(tenant=tenant, user_id="small", sessions=1, messages=2)
    subject_data_create(tenant=other_tenant, user_id="large", sessions=8, messages=40)

    def statements(t, user):
        request = verified_request(subjects=[(t, user)], scope=Scope.EVERYTHING, actor=officer)
        with CaptureQueriesContext(connection) as ctx:
            erasure.erasure_execute(request=request, actor=officer)
        return len(ctx.captured_queries)

    statements(tenant, "warm-up")  # fills the process's caches (content types) whatever ran before
    assert statements(tenant, "small") == statements(other_tenant, "large")


# --- Grace period -------------------------------------------------------------------------


def test_writes_recreating_erased_data_are_refused_during_the_grace_period(world, officer):
    acme, globex = world
    erasure.erasure_execute(request=verified_request(subjects=[(acme, "alice")], scope=Scope.EVERYTHING), actor=officer)

    with pytest.raises(SubjectErased) as excinfo:
        session_services.session_create(tenant=acme, user_id="alice", session_id="again")
    assert excinfo.value.code == "subject_erased" and excinfo.value.status_code == 409
    assert "erased" in excinfo.value.message
    with pytest.raises(SubjectErased):
        session_services.round_save(tenant=acme, user_id="alice", state={"x": 1})
    with pytest.raises(SubjectErased):
        userdata_services.user_datum_set(tenant=acme, user_id="alice", key="email", value="again")
    assert holdings(acme, "alice") == dict.fromkeys(FULL, 0)

    # Other subjects, and the same user id in another tenant, are not affected.
    session_services.session_create(tenant=acme, user_id="bob", session_id="new")
    userdata_services.user_datum_set(tenant=globex, user_id="alice", key="k", value=1)

    ErasedSubject.objects.update(grace_until=timezone.now() - timedelta(seconds=1))
    session_services.session_create(tenant=acme, user_id="alice", session_id="after-grace")


def test_user_data_erasure_refuses_only_user_data_writes(world, officer):
    acme, _ = world
    erasure.erasure_execute(request=verified_request(subjects=[(acme, "alice")], scope=Scope.USER_DATA), actor=officer)
    with pytest.raises(SubjectErased):
        userdata_services.user_datum_set(tenant=acme, user_id="alice", key="email", value="again")
    session_services.session_create(tenant=acme, user_id="alice", session_id="still-allowed")


def test_grace_check_matches_hashes_made_with_a_retired_key(world, officer, settings):
    acme, _ = world
    settings.ERASURE_HMAC_KEYS = {"k1": "old-secret-0123456789"}
    settings.ERASURE_HMAC_KEY_ID = "k1"
    erasure.erasure_execute(request=verified_request(subjects=[(acme, "alice")], scope=Scope.USER_DATA), actor=officer)
    settings.ERASURE_HMAC_KEYS = {"k1": "old-secret-0123456789", "k2": "new-secret-0123456789"}
    settings.ERASURE_HMAC_KEY_ID = "k2"
    with pytest.raises(SubjectErased):
        userdata_services.user_datum_set(tenant=acme, user_id="alice", key="email", value="again")


def test_appending_to_an_erased_session_is_not_found(world, officer):
    acme, _ = world
    session = session_selectors.session_get(tenant=acme, user_id="alice", session_id="s0")
    erasure.erasure_execute(request=verified_request(subjects=[(acme, "alice")], scope=Scope.EVERYTHING), actor=officer)
    with pytest.raises(NotFound):
        session_services.message_append(session=session, messages=[{"role": "user", "content": "late"}])


# --- Lifecycle ----------------------------------------------------------------------------


def test_due_one_calendar_month_after_receipt_and_extended_once(tenant, officer):
    received = datetime(2026, 1, 31, 12, tzinfo=UTC)
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")], received_at=received, actor=officer)
    assert request.due_on == date(2026, 2, 28)

    with pytest.raises(InvalidInput):
        erasure.erasure_request_extend(request=request, months=3, reason="complex", actor=officer)
    with pytest.raises(InvalidInput):
        erasure.erasure_request_extend(request=request, months=2, reason=" ", actor=officer)
    erasure.erasure_request_extend(request=request, months=2, reason="many systems involved", actor=officer)
    assert request.due_on == date(2026, 4, 28) and request.extension_reason == "many systems involved"
    with pytest.raises(Conflict):
        erasure.erasure_request_extend(request=request, months=1, reason="again", actor=officer)


def test_hold_release_reject_record_who_when_and_why(tenant, officer):
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")], actor=officer)
    erasure.erasure_request_verify(request=request, identity_check="checked", actor=officer)
    with pytest.raises(InvalidInput):
        erasure.erasure_request_hold(request=request, reason="", actor=officer)
    erasure.erasure_request_hold(request=request, reason="litigation hold", actor=officer)
    assert request.status == Status.ON_HOLD and request.hold_reason == "litigation hold"
    with pytest.raises(Conflict):
        erasure.erasure_execute(request=request, actor=officer)
    erasure.erasure_request_release(request=request, actor=officer)
    assert request.status == Status.RECEIVED
    erasure.erasure_request_reject(
        request=request, reason="identity not proven", subject_informed_on=date(2026, 3, 1), actor=officer
    )
    assert request.status == Status.REJECTED and request.subject_informed_on == date(2026, 3, 1)
    with pytest.raises(Conflict):
        erasure.erasure_request_verify(request=request, identity_check="checked", actor=officer)

    events = list(request.events.order_by("at", "id").values_list("from_status", "to_status", "actor_name"))
    assert events == [
        ("", "received", "officer"),
        ("received", "verified", "officer"),
        ("verified", "on_hold", "officer"),
        ("on_hold", "received", "officer"),
        ("received", "rejected", "officer"),
    ]
    assert request.status_changed_by == officer


def test_a_stale_copy_cannot_move_an_executed_request_back(world, officer):
    """Issue 9, defect 3: the status is checked on the locked row, not on the caller's copy."""
    acme, _ = world
    request = verified_request(subjects=[(acme, "alice")], scope=Scope.EVERYTHING, actor=officer)
    stale = ErasureRequest.objects.get(pk=request.pk)
    erasure.erasure_execute(request=request, actor=officer)

    with pytest.raises(Conflict):
        erasure.erasure_request_hold(request=stale, reason="late hold", actor=officer)
    with pytest.raises(Conflict):
        erasure.erasure_request_reject(
            request=stale, reason="late", subject_informed_on=date(2026, 3, 1), actor=officer
        )
    with pytest.raises(Conflict):
        erasure.erasure_request_extend(request=stale, months=1, reason="late", actor=officer)

    request.refresh_from_db()
    assert request.status == Status.EXECUTED and request.hold_reason == "" and not request.is_extended
    assert not request.events.filter(to_status__in=[Status.ON_HOLD, Status.REJECTED]).exists()
    assert stale.status == Status.EXECUTED  # the caller's copy now shows the stored status


def test_a_step_saves_only_what_it_changes_and_extends_once_whatever_the_copy(tenant, officer):
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")], reason="first notes", actor=officer)
    stale = ErasureRequest.objects.get(pk=request.pk)
    ErasureRequest.objects.filter(pk=request.pk).update(reason="edited meanwhile")
    erasure.erasure_request_extend(request=request, months=1, reason="many systems", actor=officer)

    erasure.erasure_request_verify(request=stale, identity_check="checked", actor=officer)
    with pytest.raises(Conflict):
        erasure.erasure_request_extend(request=stale, months=2, reason="again", actor=officer)

    request.refresh_from_db()
    assert request.status == Status.VERIFIED and request.reason == "edited meanwhile"
    assert request.extension_reason == "many systems"


def test_a_request_needs_a_subject_and_a_known_scope(tenant):
    with pytest.raises(InvalidInput):
        erasure.erasure_request_create(subjects=[])
    with pytest.raises(InvalidInput):
        erasure.erasure_request_create(subjects=[(tenant, "a/b")])
    with pytest.raises(InvalidInput):
        erasure.erasure_request_create(subjects=[(tenant, "alice")], scope="some")
    assert not ErasureRequest.objects.exists()


# --- Reapply after a restore and subject export --------------------------------------------


def test_reapply_erases_registered_subjects_again_after_a_restore(world, officer):
    acme, globex = world
    erasure.erasure_execute(request=verified_request(subjects=[(acme, "alice")], scope=Scope.EVERYTHING), actor=officer)
    # A restore from a backup brings alice's data back (past the grace period).
    ErasedSubject.objects.update(grace_until=timezone.now() - timedelta(seconds=1))
    subject_data_restored(tenant=acme, user_id="alice", before=ErasedSubject.objects.get().erased_at)

    preview = erasure.erasures_reapply(dry_run=True)
    assert preview["subjects_matched"] == 1 and preview["would_erase_messages"] == 6
    assert holdings(acme, "alice") == FULL

    summary = erasure.erasures_reapply()
    assert summary["subjects_matched"] == 1 and summary["erased_user_data"] == 2
    assert holdings(acme, "alice") == dict.fromkeys(FULL, 0)
    assert holdings(acme, "bob") == FULL and holdings(globex, "alice") == FULL
    assert ErasedSubject.objects.get().last_reapplied_at is not None


def test_reapply_erases_only_rows_that_existed_at_the_erasure_and_keeps_newer_ones(world, officer):
    """Issue 9, defect 8: after the grace period a person may come back with new, legitimate data
    under the same id. Re-applying erases what existed at the erasure (restored rows), never what
    was written after it. The unit of process state is the session: one created at or before the
    erasure goes whole, one created after it stays whole. A user-data key goes if its value was
    written at or before the erasure: a key set again since holds only the new value."""
    acme, globex = world
    erasure.erasure_execute(request=verified_request(subjects=[(acme, "alice")], scope=Scope.EVERYTHING), actor=officer)
    entry = ErasedSubject.objects.get()
    ErasedSubject.objects.update(grace_until=timezone.now() - timedelta(seconds=1))
    subject_data_restored(tenant=acme, user_id="alice", before=entry.erased_at, sessions=1)
    # Alice comes back after the grace period: a new session and a new key, created now.
    fresh = session_services.session_create(tenant=acme, user_id="alice", session_id="came-back")
    session_services.message_append(session=fresh, messages=[{"role": "user", "content": "new and legitimate"}])
    userdata_services.user_datum_set(tenant=acme, user_id="alice", key="newsletter", value=True)
    userdata_services.user_datum_set(
        tenant=acme, user_id="alice", key="email", value="alice@new.example"
    )  # overwrites a restored key

    preview = erasure.erasures_reapply(dry_run=True)
    assert preview["would_erase_sessions"] == 1 and preview["would_erase_messages"] == 3
    assert preview["would_erase_user_data"] == 1  # name; email holds a value set after the erasure

    summary = erasure.erasures_reapply()
    assert summary["erased_sessions"] == 1 and summary["erased_user_data"] == 1
    kept = Session.objects.get(tenant=acme, user_id="alice")
    assert kept.session_id == "came-back"
    assert [m.content for m in Message.objects.filter(session=kept)] == ["new and legitimate"]
    assert dict(UserDatum.objects.filter(tenant=acme, user_id="alice").values_list("key", "value")) == {
        "email": "alice@new.example",
        "newsletter": True,
    }
    assert holdings(acme, "bob") == FULL and holdings(globex, "alice") == FULL


def test_subject_export_holds_everything_about_the_subject(world):
    acme, _ = world
    document = userdata_selectors.subject_export(subjects=[(acme, "alice")])
    [subject] = document["subjects"]
    assert subject["tenant"] == "acme" and subject["user_id"] == "alice"
    assert {d["key"] for d in subject["user_data"]} == {"email", "name"}
    assert [s["session_id"] for s in subject["sessions"]] == ["s0", "s1"]
    first = subject["sessions"][0]
    assert [m["content"] for m in first["messages"]] == [f"hello from alice #{i}" for i in range(3)]
    assert first["rounds"][0]["state"] == {"step": 0}
    assert first["checkpoints"][0]["label"] == "done"
    assert first["transitions"][0]["to_agent"] == "writer"
    assert first["working_state"] == {"current_subtask": "task of alice"}
    assert "bob" not in json.dumps(document)


def test_without_an_erasure_key_execution_refuses_and_erases_nothing(world, officer, settings):
    acme, _ = world
    settings.ERASURE_HMAC_KEYS, settings.ERASURE_HMAC_KEY_ID = {}, ""
    request = verified_request(subjects=[(acme, "alice")], scope=Scope.USER_DATA, actor=officer)
    with pytest.raises(Conflict):
        erasure.erasure_execute(request=request, actor=officer)
    assert holdings(acme, "alice") == FULL


def test_reapply_uses_the_widest_scope_a_subject_was_erased_with(world, officer):
    acme, _ = world
    erasure.erasure_execute(request=verified_request(subjects=[(acme, "alice")], scope=Scope.EVERYTHING), actor=officer)
    ErasedSubject.objects.update(grace_until=timezone.now() - timedelta(seconds=1))
    erasure.erasure_execute(request=verified_request(subjects=[(acme, "alice")], scope=Scope.USER_DATA), actor=officer)
    ErasedSubject.objects.update(grace_until=timezone.now() - timedelta(seconds=1))
    subject_data_restored(tenant=acme, user_id="alice", before=ErasedSubject.objects.earliest("erased_at").erased_at)

    summary = erasure.erasures_reapply()
    assert summary["registry_entries"] == 2 and summary["subjects_matched"] == 1
    assert holdings(acme, "alice") == dict.fromkeys(FULL, 0)
