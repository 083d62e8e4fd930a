"""End to end in headless Chromium: a compliance officer logs in, records and verifies an
erasure request, previews it, confirms it and sees the receipt. Screenshots go to artifacts/."""

import pytest
from django.contrib.auth import get_user_model

from tests.browser.chromium import ARTIFACTS, needs_chromium
from tests.subjects import held, process_state_held
from tests.userdata_app.erasure_factories import compliance_group, subject_data_create
from userdata_app.models import ErasureRequest

pytestmark = [*needs_chromium, pytest.mark.django_db(transaction=True)]


def officer_logs_in(page, live_server):
    officer = get_user_model().objects.create_user("officer", password="correct horse battery", is_staff=True)
    officer.groups.add(compliance_group())
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "officer")
    page.fill("#id_password", "correct horse battery")
    page.click("input[type=submit]")
    page.wait_for_selector(".agentstate-dashboard")


def officer_records_and_verifies(page, live_server, *, tenant, user_id: str):
    """Record a request for one subject, scope everything, typed into the add form; verify it."""
    page.goto(f"{live_server.url}/admin/userdata_app/erasurerequest/add/")
    page.select_option("#id_scope", "everything")
    page.fill("#id_requested_by", "ticket 4711")
    page.select_option("#id_subjects-0-tenant", str(tenant.pk))
    page.fill("#id_subjects-0-user_id", user_id)
    page.click("input[name=_continue]")
    page.wait_for_selector("text=Mark verified")

    page.click("text=Mark verified")
    page.fill("#id_identity_check", "reply from the account's registered e-mail address")
    page.click("input[type=submit][value='Mark verified']")
    page.wait_for_selector("text=Execute erasure…")


def test_officer_previews_confirms_and_sees_the_receipt(live_server, browser_page, tenant, other_tenant):
    page = browser_page
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=5)
    subject_data_create(tenant=tenant, user_id="bob", sessions=1, messages=2)
    officer_logs_in(page, live_server)
    page.screenshot(path=str(ARTIFACTS / "admin-dashboard.png"), full_page=True)

    officer_records_and_verifies(page, live_server, tenant=tenant, user_id="alice")

    # The preview: counts per category, nothing erased yet.
    page.click("text=Execute erasure…")
    page.wait_for_selector("input[type=submit][value='Yes, erase']")
    counts = page.inner_text("table.erasure-counts[id^=erasure-counts]")
    assert "messages\t10" in counts and "sessions\t2" in counts and "user data\t2" in counts
    page.screenshot(path=str(ARTIFACTS / "erasure-confirmation.png"), full_page=True)
    assert process_state_held(tenant=tenant, user_id="alice")["messages"] == 10

    page.click("input[type=submit][value='Yes, erase']")
    page.wait_for_selector("table.erasure-hashes")
    receipt = page.inner_text(".erasure-receipt").lower()
    assert "messages\t10" in receipt and "hmac_sha256" in receipt and "acme\tdev\t" in receipt
    assert "by officer" in page.inner_text("#content-main")
    assert "alice" not in page.inner_text("body").lower()
    page.screenshot(path=str(ARTIFACTS / "erasure-receipt.png"), full_page=True)

    assert ErasureRequest.objects.get().status == ErasureRequest.Status.EXECUTED
    assert process_state_held(tenant=tenant, user_id="alice")["sessions"] == 0
    assert held(tenant=tenant, user_id="alice")["user_data"] == 0
    assert process_state_held(tenant=tenant, user_id="bob")["sessions"] == 1


def test_an_id_with_a_trailing_no_break_space_is_shown_and_erased_exactly(live_server, browser_page, tenant):
    """ "alice" followed by U+00A0 is another person than "alice": the officer sees the marker
    before confirming, and the bystander keeps every row."""
    page = browser_page
    subject = "alice\u00a0"
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=4)
    subject_data_create(tenant=tenant, user_id=subject, sessions=1, messages=3)
    officer_logs_in(page, live_server)
    officer_records_and_verifies(page, live_server, tenant=tenant, user_id=subject)

    page.click("text=Execute erasure…")
    page.wait_for_selector("input[type=submit][value='Yes, erase']")
    shown = page.inner_text("table.erasure-subjects tbody")
    assert "alice⟦U+00A0⟧" in shown and "(6 characters)" in shown
    assert page.locator("table.erasure-subjects .identifier-escape").count() == 1  # highlighted
    assert "messages\t3" in page.inner_text("table.erasure-counts[id^=erasure-counts]")
    page.screenshot(path=str(ARTIFACTS / "erasure-confirmation-marker.png"), full_page=True)

    page.click("input[type=submit][value='Yes, erase']")
    page.wait_for_selector("table.erasure-hashes")
    assert process_state_held(tenant=tenant, user_id=subject)["sessions"] == 0
    assert held(tenant=tenant, user_id=subject)["user_data"] == 0
    assert process_state_held(tenant=tenant, user_id="alice")["messages"] == 4
    assert held(tenant=tenant, user_id="alice")["user_data"] == 2
