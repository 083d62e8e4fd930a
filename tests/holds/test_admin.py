"""Legal holds in the admin: the Compliance group places and releases them, nobody edits or
deletes one, and every page of held data, and the dashboard, says so."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from agentstate.holds import services as holds
from agentstate.holds.models import LegalHold
from sessions_app.langgraph import services as langgraph
from sessions_app.langgraph.models import LangGraphThread
from sessions_app.models import Message, Session
from tests.userdata_app.erasure_factories import compliance_group, subject_data_create
from userdata_app.artifacts.models import Artifact
from userdata_app.memory.models import MemoryItem
from userdata_app.models import UserDatum

pytestmark = pytest.mark.django_db
ADD = reverse("admin:holds_legalhold_add")


@pytest.fixture
def officer(db):
    user = get_user_model().objects.create_user("officer", is_staff=True)
    user.groups.add(compliance_group())
    return user


def test_an_officer_places_a_hold_and_releases_it_with_a_reason(client, officer, tenant):
    client.force_login(officer)
    placed = client.post(
        ADD, {"tenant": tenant.pk, "user_id": "alice", "reference": "CASE-1", "reason": "Smith v. Acme"}
    )
    assert placed.status_code == 302, placed.content[:2000]
    hold = LegalHold.objects.get()
    assert (hold.user_id, hold.placed_by, hold.covers, hold.is_active) == ("alice", officer, "one person", True)

    page = reverse("admin:holds_legalhold_change", args=[hold.pk])
    assert client.post(page, {"release_reason_given": ""}).status_code == 200  # a reason is required
    assert LegalHold.objects.get().is_active
    assert client.post(page, {"release_reason_given": "settled"}).status_code == 302
    hold.refresh_from_db()
    assert (hold.is_active, hold.released_by, hold.release_reason) == (False, officer, "settled")
    assert client.post(reverse("admin:holds_legalhold_delete", args=[hold.pk]), {"post": "yes"}).status_code == 403
    assert LegalHold.objects.count() == 1


def test_staff_outside_the_compliance_group_cannot_place_or_release(client, tenant):
    clerk = get_user_model().objects.create_user("clerk", is_staff=True)
    client.force_login(clerk)
    assert client.post(ADD, {"tenant": tenant.pk, "reference": "X", "reason": "r"}).status_code == 403
    hold = holds.legal_hold_place(tenant=tenant, reference="CASE-1", reason="r")
    page = reverse("admin:holds_legalhold_change", args=[hold.pk])
    assert client.post(page, {"release_reason_given": "no"}).status_code == 403
    assert LegalHold.objects.get().is_active


def test_pages_of_held_data_and_the_dashboard_show_the_hold(client, officer, tenant):
    client.force_login(officer)
    officer.is_superuser = True  # sees every page
    officer.save()
    subject_data_create(tenant=tenant, user_id="alice", sessions=1)
    subject_data_create(tenant=tenant, user_id="bob", sessions=1)
    session = Session.objects.get(user_id="alice")
    holds.legal_hold_place(tenant=tenant, user_id="alice", session_pk=session.pk, reference="CASE-2", reason="r")
    holds.legal_hold_place(tenant=tenant, user_id="alice", reference="CASE-3", reason="r")

    def page(name, obj) -> str:
        return client.get(reverse(f"admin:{name}_change", args=[obj.pk])).content.decode()

    assert "Legal hold CASE-2 covers one session" in page("sessions_app_session", session)
    assert "Legal hold CASE-3 covers one person" in page("sessions_app_session", session)
    assert "Legal hold CASE-3" in page("userdata_app_userdatum", UserDatum.objects.filter(user_id="alice").first())
    assert "Legal hold CASE-3" in page("userdata_app_memoryitem", MemoryItem.objects.get(user_id="alice"))
    message = Message.objects.filter(session=session).first()
    assert "Legal hold CASE-2 covers one session" in page("sessions_app_message", message)
    assert "Legal hold CASE-3" in page("userdata_app_artifact", Artifact.objects.filter(user_id="alice").first())
    langgraph.checkpoint_put(
        tenant=tenant,
        thread_id="t-alice",
        user_id="alice",
        default_user_id="alice",
        checkpoint_ns="",
        checkpoint_id="c1",
        parent_checkpoint_id=None,
        checkpoint={"type": "json", "data": "e30="},
        metadata={},
        channel_versions={},
    )
    assert "Legal hold CASE-3" in page("sessions_app_langgraphthread", LangGraphThread.objects.get())
    bob = Session.objects.get(user_id="bob")
    assert "Legal hold" not in page("sessions_app_session", bob)
    assert (
        '<span class="n">2</span><span>active legal holds</span>' in client.get(reverse("admin:index")).content.decode()
    )
