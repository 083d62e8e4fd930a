"""An erasure request that covers held data stops with an explanation and erases nothing; with
what is held withheld, it erases the rest, its receipt says what was withheld and why, and what
is withheld stays writable. SQLite and PostgreSQL."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from agentstate.holds import services as holds
from agentstate.holds.models import LegalHold
from backends.adk.people.artifacts.models import Artifact
from backends.adk.people.models import AdkEventUserDelta
from sessions_app import services as session_services
from sessions_app.models import Message, Session
from tests.holds.world import build
from tests.subjects import held as rows_of
from tests.userdata_app.erasure_factories import SUBJECT_DATA_COUNTS as FULL
from tests.userdata_app.erasure_factories import (
    compliance_group,
    subject_data_create,
    subject_data_restored,
    verified_request,
)
from userdata_app import erasure
from userdata_app import services as userdata_services
from userdata_app.models import ErasedSubject, ErasureReceipt, ErasureRequest, UserDatum

pytestmark = pytest.mark.django_db
Scope, Status = ErasureRequest.Scope, ErasureRequest.Status
NOTHING = dict.fromkeys(FULL, 0)


@pytest.fixture
def world(tenant):
    for user_id in ("alice", "bob"):
        subject_data_create(tenant=tenant, user_id=user_id)
    return tenant


def _session(tenant, user_id: str, session_id: str) -> Session:
    return Session.objects.get(tenant=tenant, user_id=user_id, session_id=session_id)


def test_a_hold_stops_the_erasure_at_review_and_nothing_is_erased(world):
    holds.legal_hold_place(tenant=world, user_id="alice", reference="CASE-1", reason="Smith v. Acme")
    request = verified_request(subjects=[(world, "alice"), (world, "bob")], scope=Scope.EVERYTHING)
    assert erasure.erasure_preview(request=request) == FULL  # bob's only: alice's is withheld
    [withheld] = erasure.erasure_withheld(request=request)
    assert withheld.references == ["CASE-1"] and withheld.whole and withheld.counts == FULL

    with pytest.raises(erasure.ErasureHeld) as refused:
        erasure.erasure_execute(request=request)

    assert refused.value.code == "held" and "CASE-1" in refused.value.message
    assert "withholding what is held" in refused.value.message
    request.refresh_from_db()
    assert request.status == Status.VERIFIED and not request.failure  # still to decide, not failed
    assert rows_of(tenant=world, user_id="alice") == FULL == rows_of(tenant=world, user_id="bob")


def test_withholding_erases_the_rest_and_the_receipt_says_what_was_kept_and_why(world):
    holds.legal_hold_place(tenant=world, user_id="alice", reference="CASE-1", reason="Smith v. Acme")
    request = verified_request(subjects=[(world, "alice"), (world, "bob")], scope=Scope.EVERYTHING)

    receipt = erasure.erasure_execute(request=request, withhold_held=True)

    assert receipt.counts == FULL
    assert rows_of(tenant=world, user_id="alice") == FULL and rows_of(tenant=world, user_id="bob") == NOTHING
    [kept] = receipt.withheld
    assert (kept["tenant"], kept["holds"], kept["whole"], kept["counts"]) == ("acme", ["CASE-1"], True, FULL)
    assert kept["hmac_sha256"] in {s["hmac_sha256"] for s in receipt.subjects}
    assert "alice" not in str(erasure.receipt_document(receipt=receipt)) and "Smith" not in str(receipt.withheld)
    assert ErasedSubject.objects.count() == 1  # bob: writes recreating alice's data are not refused
    session_services.session_create(tenant=world, user_id="alice", session_id="new")
    userdata_services.user_datum_set(tenant=world, user_id="alice", key="email", value="still@example.com")
    assert "withheld by legal hold CASE-1" in request.events.order_by("-at", "-id").first().note


def test_a_session_hold_withholds_that_session_only(world):
    s0 = _session(world, "alice", "s0")
    holds.legal_hold_place(tenant=world, user_id="alice", session_pk=s0.pk, reference="CASE-2", reason="r")
    request = verified_request(subjects=[(world, "alice")], scope=Scope.EVERYTHING)

    receipt = erasure.erasure_execute(request=request, withhold_held=True)

    left = rows_of(tenant=world, user_id="alice")
    assert (left["sessions"], left["messages"], left["user_data"], left["memories"]) == (1, 3, 0, 0)
    assert Session.objects.filter(pk=s0.pk).exists()
    assert receipt.withheld[0]["whole"] is False and receipt.withheld[0]["counts"]["messages"] == 3
    session_services.message_append(session=s0, messages=[{"content": "still writable"}])
    assert Message.objects.filter(session=s0).count() == 4


def test_a_session_hold_does_not_stop_an_erasure_of_user_data(world):
    s0 = _session(world, "alice", "s0")
    holds.legal_hold_place(tenant=world, user_id="alice", session_pk=s0.pk, reference="CASE-2", reason="r")
    request = verified_request(subjects=[(world, "alice")], scope=Scope.USER_DATA)
    receipt = erasure.erasure_execute(request=request)
    assert receipt.withheld == [] and receipt.counts["user_data"] == 2


def test_after_release_the_erasure_runs_whole_and_the_hold_keeps_only_a_hash(world):
    hold = holds.legal_hold_place(tenant=world, user_id="alice", reference="CASE-1", reason="r")
    holds.legal_hold_release(hold=hold, reason="settled")
    receipt = erasure.erasure_execute(request=verified_request(subjects=[(world, "alice")], scope=Scope.EVERYTHING))
    assert receipt.withheld == [] and rows_of(tenant=world, user_id="alice") == NOTHING
    hold.refresh_from_db()
    assert hold.user_id == "" and hold.subject_hash == receipt.subjects[0]["hmac_sha256"]
    assert not LegalHold.objects.filter(user_id="alice").exists()


def test_erase_user_stops_with_the_explanation_unless_told_to_withhold(world):
    holds.legal_hold_place(tenant=world, reference="CASE-3", reason="r")  # the whole tenant
    with pytest.raises(CommandError, match="CASE-3"):
        call_command("erase_user", "--subject", "acme:alice", "--yes", stdout=io.StringIO())
    assert rows_of(tenant=world, user_id="alice") == FULL
    out = io.StringIO()
    call_command("erase_user", "--subject", "acme:alice", "--yes", "--withhold-held", stdout=out)
    assert '"holds": [' in out.getvalue() and rows_of(tenant=world, user_id="alice") == FULL


def test_the_admin_review_explains_the_hold_and_erases_only_what_is_not_held(client, world):
    officer = get_user_model().objects.create_user("officer", is_staff=True)
    officer.groups.add(compliance_group())
    client.force_login(officer)
    s0 = _session(world, "alice", "s0")
    holds.legal_hold_place(tenant=world, user_id="alice", session_pk=s0.pk, reference="CASE-2", reason="r")
    request = verified_request(subjects=[(world, "alice")], scope=Scope.EVERYTHING)
    changelist = reverse("admin:userdata_app_erasurerequest_changelist")

    page = client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])).content.decode()
    assert "Withheld by legal holds" in page and "CASE-2" in page
    preview = client.post(changelist, {"action": "execute_erasure", "_selected_action": [request.pk]})
    text = preview.content.decode()
    assert "Legal holds cover part of this request" in text and "Yes, erase what is not held" in text
    done = client.post(
        changelist,
        {"action": "execute_erasure", "_selected_action": [request.pk], "post": "yes", "withhold_held": "yes"},
    )
    assert done.status_code == 302
    request.refresh_from_db()
    assert request.status == Status.EXECUTED and Session.objects.filter(pk=s0.pk).exists()
    receipt_page = client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])).content.decode()
    assert "Legal hold CASE-2" in receipt_page


def test_reapplying_erasures_after_a_restore_keeps_what_a_hold_now_covers(world):
    erasure.erasure_execute(request=verified_request(subjects=[(world, "alice")], scope=Scope.EVERYTHING))
    ErasedSubject.objects.update(grace_until=timezone.now() - timedelta(seconds=1))
    subject_data_restored(tenant=world, user_id="alice", before=ErasedSubject.objects.get().erased_at)
    holds.legal_hold_place(tenant=world, user_id="alice", reference="CASE-4", reason="r")

    assert erasure.erasures_reapply(dry_run=True)["would_erase_messages"] == 0
    assert erasure.erasures_reapply()["erased_messages"] == 0
    assert rows_of(tenant=world, user_id="alice") == FULL


@pytest.mark.parametrize("scope", [Scope.USER_DATA, Scope.EVERYTHING])
def test_a_session_hold_withholds_what_hangs_off_the_session_in_any_scope(api, tenant, scope):
    """The held ADK session's artifacts and its events' ``user:`` deltas are user data that hang off
    it (the map's ``hangs_off``): the erasure keeps them, as the API's delete does, and says so."""
    build(api)
    a1 = Session.objects.get(tenant=tenant, user_id="u1", session_id="a1")
    holds.legal_hold_place(tenant=tenant, user_id="u1", session_pk=a1.pk, reference="CASE-5", reason="r")
    out = io.StringIO()
    call_command("erase_user", "--subject", "acme:u1", "--scope", scope, "--yes", "--withhold-held", stdout=out)

    assert Artifact.objects.filter(adk_session=a1).count() == 1
    assert AdkEventUserDelta.objects.filter(session_pk=a1.pk).count() == 1
    assert not UserDatum.objects.filter(user_id="u1").exists()  # the rest of the person is erased
    [kept] = ErasureReceipt.objects.get().withheld
    assert (kept["holds"], kept["whole"]) == (["CASE-5"], False)
    assert (kept["counts"]["artifacts"], kept["counts"]["adk_user_state"]) == (1, 1)
