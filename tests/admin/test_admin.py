"""The staff admin: browsing stays fast and read-only; the erasure workflow end to end over HTTP;
who may execute and export."""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessions_app import selectors as session_selectors
from tests.admin.staff import login, staff
from tests.api.assertions import streamed
from tests.subjects import process_state_held
from tests.userdata_app.erasure_factories import (
    SUBJECT_DATA_COUNTS,
    erasure_request_added,
    subject_data_create,
    verified_request,
)
from userdata_app import erasure
from userdata_app.models import ErasureRequest, ErasureSubject

Status = ErasureRequest.Status
CHANGELIST = reverse("admin:userdata_app_erasurerequest_changelist")


@pytest.fixture
def officer(db):
    return staff("officer", groups=["Compliance"])


# --- Browsing ---------------------------------------------------------------------------------


@pytest.mark.scale
def test_session_changelist_query_count_does_not_grow_with_rows(client, officer, tenant, other_tenant):
    login(client, officer)
    url = reverse("admin:sessions_app_session_changelist")
    subject_data_create(tenant=tenant, user_id="u0", sessions=2, messages=1)

    def queries():
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url)
        assert response.status_code == 200
        return len(ctx.captured_queries)

    few = queries()
    for n in range(1, 6):
        subject_data_create(tenant=other_tenant if n % 2 else tenant, user_id=f"u{n}", sessions=4, messages=2)
    assert queries() == few


def test_session_list_shows_message_count_search_and_filters(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=7)
    subject_data_create(tenant=tenant, user_id="bob", sessions=1, messages=1)
    url = reverse("admin:sessions_app_session_changelist")

    response = client.get(url, {"q": "alice"})
    assert response.status_code == 200
    rows = response.context["cl"].result_list
    assert [(s.user_id, s.message_count) for s in rows] == [("alice", 7)]
    assert client.get(url, {"q": "ali"}).context["cl"].result_count == 0  # exact match only
    assert client.get(url, {"agent_id": "planner", "ended": "no"}).context["cl"].result_count == 2
    assert client.get(url, {"agent_id": "nobody"}).context["cl"].result_count == 0


def test_session_detail_is_read_only_with_history_rounds_checkpoints_transitions(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=25)
    session = session_selectors.session_get(tenant=tenant, user_id="alice", session_id="s0")
    url = reverse("admin:sessions_app_session_change", args=[session.pk])

    page = client.get(url).content.decode()
    assert "hello from alice #24" in page and "hello from alice #4" not in page  # the latest 20
    history = reverse("admin:sessions_app_message_changelist") + f"?session__id__exact={session.pk}"
    assert history.replace("&", "&amp;") in page or history in page
    assert "Round 1" in page and "&quot;step&quot;: 0" in page
    assert "done" in page and "writer" in page
    assert "task of alice" in page  # working state
    assert "10 tokens (7 in, 3 out) in 1 model requests over 1 turns." in page  # usage

    full = client.get(history)
    assert full.status_code == 200 and full.context["cl"].result_count == 25
    assert client.post(url, {"agent_id": "changed"}).status_code == 403
    assert client.get(reverse("admin:sessions_app_session_add")).status_code == 403
    assert client.get(reverse("admin:sessions_app_session_delete", args=[session.pk])).status_code == 403


def test_a_fork_and_its_parent_link_to_each_other(client, officer, tenant):
    from sessions_app import services as session_services

    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=5)
    parent = session_selectors.session_get(tenant=tenant, user_id="alice", session_id="s0")
    session_services.message_pop(session=parent)
    fork = session_services.session_fork(session=parent, new_session_id="branch-1", up_to_seq=3)
    parent_url = reverse("admin:sessions_app_session_change", args=[parent.pk])
    fork_url = reverse("admin:sessions_app_session_change", args=[fork.pk])

    parent_page = client.get(parent_url).content.decode()
    assert f'<a href="{fork_url}">branch-1</a>' in parent_page
    fork_page = client.get(fork_url).content.decode()
    assert f'<a href="{parent_url}">s0</a>, up to message 3, round' in fork_page
    assert "Not a fork." in parent_page and "No forks." in fork_page
    listed = client.get(reverse("admin:sessions_app_session_changelist"), {"q": "alice"}).context["cl"].result_list
    assert sorted((s.session_id, s.message_count) for s in listed) == [("branch-1", 3), ("s0", 4)]


def test_an_openai_agents_branch_shows_its_name_on_both_pages(client, officer, tenant):
    from sessions_app import services as session_services

    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=3)
    parent = session_selectors.session_get(tenant=tenant, user_id="alice", session_id="s0")
    marker = {"openai_agents": {"session_id": "chat-1", "branch": "rome-instead"}}
    fork = session_services.session_fork(session=parent, new_session_id="oa-branch-1f", metadata=marker)
    parent_page = client.get(reverse("admin:sessions_app_session_change", args=[parent.pk])).content.decode()
    fork_url = reverse("admin:sessions_app_session_change", args=[fork.pk])
    assert f'<a href="{fork_url}">chat-1, branch rome-instead</a>' in parent_page
    fork_page = client.get(fork_url).content.decode()
    assert "chat-1, branch rome-instead" in fork_page


def test_user_data_browse_by_tenant_user_and_key(client, officer, tenant, other_tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=0)
    subject_data_create(tenant=other_tenant, user_id="alice", sessions=0)
    url = reverse("admin:userdata_app_userdatum_changelist")
    assert client.get(url, {"q": "alice"}).context["cl"].result_count == 4
    assert client.get(url, {"q": "alice", "tenant__id__exact": tenant.pk}).context["cl"].result_count == 2
    assert client.get(url, {"q": "email"}).context["cl"].result_count == 2


def test_dashboard_shows_totals_and_a_chart_without_external_files(client, officer, tenant, fresh_dashboard):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=5)
    overdue = erasure.erasure_request_create(
        subjects=[(tenant, "alice")], received_at=timezone.now() - timedelta(days=40)
    )
    erasure.erasure_request_create(subjects=[(tenant, "bob")])

    page = client.get(reverse("admin:index")).content.decode()
    assert "<svg" in page and "10 messages" in page  # today's bar tooltip
    dashboard = page[page.index("agentstate-dashboard") : page.index("</section>")]
    assert "http://" not in dashboard and "https://" not in dashboard
    numbers = [int(n) for n in __import__("re").findall(r'<span class="n">(\d+)</span>', dashboard)]
    # sessions, messages, active today, open and overdue erasure requests, open and overdue access
    # requests, active legal holds
    assert numbers == [2, 10, 2, 2, 1, 0, 0, 0]
    usage = page[page.index('aria-label="Model usage"') :]
    assert "<td>acme</td><td>2</td><td>2</td><td>14</td><td>6</td><td>20</td>" in usage  # per tenant
    sessions = reverse("admin:sessions_app_session_changelist") + f"?tenant__id__exact={tenant.pk}&amp;user_id=alice"
    assert f'<a href="{sessions}">alice</a></td><td>2</td>' in usage  # per user, linked to their sessions
    changelist = client.get(CHANGELIST, {"open": "overdue"})
    assert [r.pk for r in changelist.context["cl"].result_list] == [overdue.pk]
    assert "overdue" in changelist.content.decode()


# --- The erasure workflow over HTTP -----------------------------------------------------------


def test_officer_takes_a_request_from_receipt_to_executed_receipt(client, officer, tenant, other_tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice")
    subject_data_create(tenant=tenant, user_id="bob")

    erasure_request_added(client, tenant, "alice")
    request = ErasureRequest.objects.get()
    assert request.status == Status.RECEIVED and request.due_on is not None

    verify = reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, "verify"])
    assert client.post(verify, {"identity_check": "reply by e-mail"}).status_code == 302
    request.refresh_from_db()
    assert request.status == Status.VERIFIED

    # The preview: a confirmation page with counts per category; nothing erased yet.
    preview = client.post(CHANGELIST, {"action": "execute_erasure", "_selected_action": [request.pk]})
    assert preview.status_code == 200
    assert preview.context["previews"][0]["counts"] == SUBJECT_DATA_COUNTS
    assert "Yes, erase" in preview.content.decode()
    assert process_state_held(tenant=tenant, user_id="alice")["messages"] == 6

    done = client.post(CHANGELIST, {"action": "execute_erasure", "_selected_action": [request.pk], "post": "yes"})
    assert done.status_code == 302 and done.url == reverse(
        "admin:userdata_app_erasurerequest_change", args=[request.pk]
    )
    request.refresh_from_db()
    assert request.status == Status.EXECUTED
    assert process_state_held(tenant=tenant, user_id="alice")["sessions"] == 0
    assert process_state_held(tenant=tenant, user_id="bob")["sessions"] == 2

    page = client.get(done.url).content.decode()
    assert "Receipt" in page and "hmac_sha256" in page and "officer" in page
    assert "alice" not in page  # the receipt page shows no plain subject id
    assert "Execute erasure" not in page


def test_lifecycle_forms_record_reasons_and_refuse_bad_input(client, officer, tenant):
    login(client, officer)
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")])
    hold = reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, "hold"])
    response = client.post(hold, {"reason": ""})
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    client.post(hold, {"reason": "litigation"})
    request.refresh_from_db()
    assert request.status == Status.ON_HOLD and request.hold_reason == "litigation"

    client.post(reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, "release"]), {"note": ""})
    extend = reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, "extend"])
    due = ErasureRequest.objects.get().due_on
    assert client.post(extend, {"months": "3", "reason": "x"}).status_code == 200  # not a choice
    client.post(extend, {"months": "2", "reason": "complex"})
    assert ErasureRequest.objects.get().due_on == erasure.add_months(due, 2)
    client.post(
        reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, "reject"]),
        {"reason": "not the account holder", "subject_informed_on": "2026-03-01"},
    )
    request.refresh_from_db()
    assert request.status == Status.REJECTED and str(request.subject_informed_on) == "2026-03-01"
    page = client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])).content.decode()
    assert "not the account holder" in page and "Received → On hold" in page


def test_staff_without_the_permission_can_browse_but_not_execute_or_export(client, browser_staff, tenant):
    login(client, browser_staff)
    subject_data_create(tenant=tenant, user_id="alice")
    request = verified_request(subjects=[(tenant, "alice")], scope="everything")

    changelist = client.get(CHANGELIST)
    assert changelist.status_code == 200
    assert changelist.context["action_form"] is None  # neither the execute nor the export action is offered
    page = client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])).content.decode()
    assert reverse("admin:userdata_app_erasurerequest_execute", args=[request.pk]) not in page  # no button
    assert "<strong>Execute erasure</strong>: needs the permission" in page  # and the reason why

    client.post(CHANGELIST, {"action": "execute_erasure", "_selected_action": [request.pk], "post": "yes"})
    assert client.get(reverse("admin:userdata_app_erasurerequest_execute", args=[request.pk])).status_code == 403
    assert client.get(reverse("admin:userdata_app_erasurerequest_export", args=[request.pk])).status_code == 403
    request.refresh_from_db()
    assert request.status == Status.VERIFIED
    assert process_state_held(tenant=tenant, user_id="alice")["sessions"] == 2


def test_execute_acts_only_on_verified_requests(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=0)
    received = erasure.erasure_request_create(subjects=[(tenant, "alice")])
    response = client.post(
        CHANGELIST, {"action": "execute_erasure", "_selected_action": [received.pk], "post": "yes"}, follow=True
    )
    assert "nothing to execute" in response.content.decode()
    received.refresh_from_db()
    assert received.status == Status.RECEIVED


def test_export_action_downloads_everything_about_the_subjects(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=2)
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")])
    response = client.post(CHANGELIST, {"action": "export_subject_data", "_selected_action": [request.pk]})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert "attachment" in response["Content-Disposition"]
    [subject] = json.loads(streamed(response))["subjects"]
    assert subject["user_id"] == "alice" and len(subject["sessions"][0]["messages"]) == 2


def test_subjects_cannot_change_after_verification_and_bad_ids_are_refused(client, officer, tenant):
    login(client, officer)
    response = client.post(
        reverse("admin:userdata_app_erasurerequest_add"),
        {
            "scope": "user_data",
            "received_at_0": timezone.localdate().isoformat(),
            "received_at_1": "10:00:00",
            "subjects-TOTAL_FORMS": "1",
            "subjects-INITIAL_FORMS": "0",
            "subjects-MIN_NUM_FORMS": "1",
            "subjects-MAX_NUM_FORMS": "1000",
            "subjects-0-tenant": str(tenant.pk),
            "subjects-0-user_id": "a/b",
        },
    )
    assert response.status_code == 200 and "must not contain" in response.content.decode()
    twice = client.post(
        reverse("admin:userdata_app_erasurerequest_add"),
        {
            "scope": "user_data",
            "received_at_0": timezone.localdate().isoformat(),
            "received_at_1": "10:00:00",
            "subjects-TOTAL_FORMS": "2",
            "subjects-INITIAL_FORMS": "0",
            "subjects-MIN_NUM_FORMS": "1",
            "subjects-MAX_NUM_FORMS": "1000",
            "subjects-0-tenant": str(tenant.pk),
            "subjects-0-user_id": "alice",
            "subjects-1-tenant": str(tenant.pk),
            "subjects-1-user_id": "alice",
        },
    )
    assert twice.status_code == 200 and "listed once" in twice.content.decode()
    assert not ErasureRequest.objects.exists()

    request = verified_request(subjects=[(tenant, "alice")], scope="user_data")
    page = client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk]))
    assert page.context["inline_admin_formsets"][0].has_change_permission is False
    assert ErasureSubject.objects.get().user_id == "alice"


def test_no_str_of_what_staff_act_on_carries_the_user_id(tenant):
    """The admin log keeps __str__ of what staff touch: it must not hold personal data."""
    from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
    from userdata_app.models import ErasedSubject, ErasureEvent, ErasureReceipt, UserDatum

    user_id = "alice.pii@example.com"
    subject_data_create(tenant=tenant, user_id=user_id, sessions=1, messages=1)
    request = verified_request(subjects=[(tenant, user_id)], scope="user_data")
    objects = [
        *Session.objects.all(),
        *Message.objects.all(),
        *Round.objects.all(),
        *Checkpoint.objects.all(),
        *AgentTransition.objects.all(),
        *UserDatum.objects.all(),
        request,
        *request.subjects.all(),
        *request.events.all(),
    ]
    erasure.erasure_execute(request=request)
    objects += [*ErasureReceipt.objects.all(), *ErasedSubject.objects.all(), *ErasureEvent.objects.all()]
    assert len(objects) >= 12
    for obj in objects:
        assert "alice" not in str(obj), (type(obj).__name__, str(obj))


def test_staff_find_a_message_by_its_words_from_the_message_list(client, officer, tenant, other_tenant):
    from sessions_app import services as session_services

    login(client, officer)
    mine = session_services.session_create(tenant=tenant, user_id="alice", session_id="trip")
    session_services.message_append(
        session=mine, messages=[{"content": "book the Lisbon flight"}, {"content": "and a hotel"}]
    )
    theirs = session_services.session_create(tenant=other_tenant, user_id="bob", session_id="s1")
    session_services.message_append(session=theirs, messages=[{"content": [{"type": "text", "text": "Lisbon too"}]}])
    changelist = reverse("admin:sessions_app_message_changelist")

    assert 'name="words"' in client.get(changelist).content.decode()  # the box on the list itself
    found = client.get(changelist, {"words": "lisbon"})
    assert sorted((m.session.user_id, m.seq) for m in found.context["cl"].result_list) == [("alice", 1), ("bob", 1)]
    phrase = client.get(changelist, {"words": '"lisbon flight"', "tenant__id__exact": tenant.pk})
    assert [m.seq for m in phrase.context["cl"].result_list] == [1]
    refused = client.get(changelist, {"words": "-lisbon"})
    assert refused.status_code == 200 and refused.context["cl"].result_count == 0
    assert "at least one word" in refused.content.decode()


def test_staff_find_a_memory_item_by_its_words_from_the_memory_item_list(client, officer, tenant, other_tenant):
    from userdata_app.memory.services import memory_batch

    login(client, officer)
    for owner, user_id, text in [(tenant, "alice", "the Lisbon flight"), (other_tenant, "bob", "Lisbon too")]:
        memory_batch(
            tenant=owner, ops=[{"op": "put", "namespace": ["users", user_id], "key": "trip", "value": {"t": text}}]
        )
    changelist = reverse("admin:userdata_app_memoryitem_changelist")

    assert 'name="words"' in client.get(changelist).content.decode()  # the box on the list itself
    found = client.get(changelist, {"words": "lisbon"})
    assert sorted(item.user_id for item in found.context["cl"].result_list) == ["alice", "bob"]
    phrase = client.get(changelist, {"words": '"lisbon flight"'})
    assert [item.user_id for item in phrase.context["cl"].result_list] == ["alice"]
    refused = client.get(changelist, {"words": "-lisbon"})
    assert refused.status_code == 200 and refused.context["cl"].result_count == 0
