"""Legal holds in the admin: the Compliance group places and releases them, nobody edits or
deletes one, and every page of held data, and the dashboard, says so."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.urls import reverse

from agentstate.holds import services as holds
from agentstate.holds.models import LegalHold
from backends.adk.people.artifacts.models import Artifact
from backends.langgraph.process import services as langgraph
from backends.langgraph.process.models import LangGraphThread
from sessions_app.models import Message, Session
from tests.userdata_app.erasure_factories import compliance_group, subject_data_create
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
        ADD,
        {"tenant": tenant.pk, "covers": "person", "user_id": "alice", "reference": "CASE-1", "reason": "Smith v. Acme"},
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


def _place(client, tenant, **fields):
    return client.post(ADD, {"tenant": tenant.pk, "reference": "CASE-9", "reason": "Smith v. Acme", **fields})


def test_a_hold_placed_in_the_admin_lands_on_the_user_id_as_typed(client, officer, tenant):
    """Finding 2 of issue 41: " alice" was stored as "alice", and her own deletes then passed; spaces
    alone became a hold on the whole tenant."""
    client.force_login(officer)
    for user_id in (" alice", "alice", "alice\u00a0"):
        subject_data_create(tenant=tenant, user_id=user_id, sessions=1)
    for user_id in (" alice", "alice\u00a0"):
        placed = _place(client, tenant, covers="person", user_id=user_id)
        assert placed.status_code == 302
    assert sorted(LegalHold.objects.values_list("user_id", flat=True)) == [" alice", "alice\u00a0"]
    assert holds.hold_covering(tenant=tenant, user_id="alice") is None  # neither the tenant nor another person
    told = [str(m) for m in get_messages(placed.wsgi_request)]
    assert "Legal hold CASE-9 covers everything of user alice⟦U+00A0⟧ of tenant acme." in told

    # Spaces alone, or an id with a stray space that holds nothing, are refused and say why.
    spaces = _place(client, tenant, covers="person", user_id="   ").content.decode()
    assert "⟦U+0020⟧⟦U+0020⟧⟦U+0020⟧ is only spaces and nothing is held under it in tenant acme" in spaces
    slip = _place(client, tenant, covers="person", user_id="alice ").content.decode()
    assert "begins or ends with a space and nothing is held under it" in slip
    assert LegalHold.objects.count() == 2


def test_the_whole_tenant_is_held_only_when_chosen(client, officer, tenant):
    client.force_login(officer)
    blank = _place(client, tenant, covers="person", user_id="")
    assert blank.status_code == 200 and "Give the user id for a hold on one person" in blank.content.decode()
    unchosen = _place(client, tenant, user_id="")
    assert unchosen.status_code == 200 and not LegalHold.objects.exists()
    mixed = _place(client, tenant, covers="tenant", user_id="alice")
    assert mixed.status_code == 200 and "A hold on the whole tenant names no user id" in mixed.content.decode()
    assert not LegalHold.objects.exists()
    assert _place(client, tenant, covers="tenant").status_code == 302
    assert LegalHold.objects.get().covers == "the whole tenant"


def test_a_session_hold_names_the_session_by_its_id_and_shows_it(client, officer, tenant):
    client.force_login(officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=2)
    unknown = _place(client, tenant, covers="session", user_id="alice", session_id="s9")
    assert unknown.status_code == 200 and "No session s9 of user alice" in unknown.content.decode()
    assert _place(client, tenant, covers="session", user_id="alice", session_id=" s1").status_code == 200
    assert _place(client, tenant, covers="session", user_id="alice", session_id="s1").status_code == 302
    hold = LegalHold.objects.get()
    assert hold.session_pk == Session.objects.get(user_id="alice", session_id="s1").pk

    listed = client.get(reverse("admin:holds_legalhold_changelist")).content.decode()
    page = client.get(reverse("admin:holds_legalhold_change", args=[hold.pk])).content.decode()
    for shown in (listed, page):
        assert 'one session: <a href="/admin/sessions_app/session/' in shown
        assert '<code class="identifier">s1</code>' in shown and '<code class="identifier">alice</code>' in shown
