"""The admin as the three staff roles see it, in headless Chromium at 1366 px (issue 15, pages
1-6; issue 29, each framework's state): a superuser, a Compliance officer without superuser rights,
and staff without the Compliance group. Screenshots go to artifacts/ (git ignores it)."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agentstate.tenancy.models import Tenant
from sessions_app.models import Session
from tests.admin.staff import staff
from tests.browser.chromium import ARTIFACTS, needs_chromium
from tests.userdata_app.erasure_factories import compliance_group, subject_data_create
from userdata_app.models import ErasureRequest

pytestmark = [*needs_chromium, pytest.mark.django_db(transaction=True)]
WIDTH = 1366  # a common laptop's
PASSWORD = "correct horse battery"
VIEWER_PERMS = [
    *(f"sessions_app.view_{m}" for m in ("session", "message", "round", "checkpoint", "agenttransition")),
    *(f"sessions_app.view_{m}" for m in ("adkevent", "langgraphthread", "langgraphcheckpoint")),
    "userdata_app.view_userdatum",
    "userdata_app.view_erasurerequest",
    "userdata_app.add_erasurerequest",
    "userdata_app.change_erasurerequest",
    "userdata_app.view_erasuresubject",
]


def make_user(role: str):
    if role == "superuser":
        return get_user_model().objects.create_superuser("root", "root@example.invalid", PASSWORD)
    user = staff(role, perms=VIEWER_PERMS if role == "viewer" else ())
    if role == "officer":
        user.groups.add(compliance_group())
    user.set_password(PASSWORD)
    user.save()
    return user


def log_in(page, live_server, username: str):
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector(".agentstate-dashboard")


def shot(page, name: str):
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def assert_fits(page):
    """Nothing wider than the window: no sideways scrolling, no column cut off."""
    overflow = page.evaluate("""() => {
        const results = document.querySelector('#changelist .results');
        const right = results.getBoundingClientRect().right;
        const cells = [...document.querySelectorAll('#result_list th, #result_list td')];
        return {page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
                table: results.scrollWidth - results.clientWidth,
                cells: cells.filter(c => c.getBoundingClientRect().right > right + 1).length};
    }""")
    assert overflow == {"page": 0, "table": 0, "cells": 0}, overflow


@pytest.fixture
def demo(db):
    call_command("load_demo_data", "--users", "2", stdout=None)
    # Ids as long as real ones get (an e-mail address, a UUID, a long workspace name): the lists must still fit.
    subject_data_create(
        tenant=Tenant.objects.get(slug="demo-acme"),
        user_id="margaret.hamilton-long-address@example.com",
        sessions=1,
        messages=2,
    )
    Session.objects.filter(user_id__startswith="margaret").update(
        session_id="3f2b8c1e-9d4a-4f6b-8e2a-7c5d1b0a9e37",
        agent_id="customer-support-escalation-agent",
        workspace_id="enterprise-customers-emea-north",
    )
    return Session.objects.select_related("tenant").order_by("id").first()


@pytest.mark.parametrize("role", ["superuser", "officer", "viewer"])
def test_staff_roles_read_the_admin(live_server, browser_page, demo, role):
    page = browser_page
    page.set_viewport_size({"width": WIDTH, "height": 900})
    user = make_user(role)
    log_in(page, live_server, user.username)

    # 5. The dashboard: every card is a link; the chart's last label stays inside it.
    cards = page.locator("a.agentstate-card")
    # The viewer may open erasure requests but not access requests or legal holds: three cards fewer.
    assert cards.count() == (5 if role == "viewer" else 8) and page.locator("div.agentstate-card").count() == 0
    svg, last = page.locator(".agentstate-chart svg"), page.locator(".agentstate-chart text.tick").last
    assert (
        last.bounding_box()["x"] + last.bounding_box()["width"]
        <= svg.bounding_box()["x"] + svg.bounding_box()["width"] + 1
    )
    shot(page, f"admin-{role}-1-dashboard")
    page.click("a.agentstate-card:has-text('active sessions today')")
    page.wait_for_selector("#result_list")  # load_demo_data has sessions still going
    assert "updated_at__gte" in page.url and "ended=no" in page.url

    # 6. The session list fits 1366 px.
    page.goto(f"{live_server.url}/admin/sessions_app/session/")
    assert_fits(page)
    shot(page, f"admin-{role}-2-sessions")

    # 1 and 4. The session page: tenant / user / session as its title, no stray ":", ISO dates,
    # the user id linked to the user's sessions and user data.
    page.goto(f"{live_server.url}/admin/sessions_app/session/{demo.pk}/change/")
    title = page.inner_text("h2.session-title")
    assert title == f"{demo.tenant.slug} / {demo.user_id} / {demo.session_id}"
    assert page.locator("label", has_text=re.compile(r"^\s*:\s*$")).count() == 0
    body = page.inner_text("#content")
    assert not re.search(r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\.? \d{1,2}, \d{4}|[ap]\.m\.", body)
    shot(page, f"admin-{role}-3-session")
    page.click(".field-user_id_linked a:has-text('user data')")
    page.wait_for_selector("#result_list")
    assert page.locator("#result_list tbody tr").count() == 3  # email, name, preferences

    # 1 and 2. The message list: each row names its session; filter by user id, role as a choice.
    page.goto(f"{live_server.url}/admin/sessions_app/message/")
    assert page.locator("#result_list td.field-session_link").first.inner_text().count(" / ") == 2
    page.fill("input[name=user_id]", demo.user_id)
    page.press("input[name=user_id]", "Enter")
    page.wait_for_url(re.compile(r"user_id="))
    page.click("#changelist-filter a:has-text('assistant')")
    page.wait_for_url(re.compile(r"role=assistant"))
    rows = page.locator("#result_list tbody tr")
    assert rows.count() > 0 and all(
        f"/ {demo.user_id} /" in t for t in page.locator("td.field-session_link").all_inner_texts()
    )
    assert set(page.locator("td.field-role").all_inner_texts()) == {"assistant"}
    assert_fits(page)
    shot(page, f"admin-{role}-4-messages")

    # 3 and 9. The erasure request: who may decide, and the admin's own 403 page for the rest.
    request = ErasureRequest.objects.filter(status=ErasureRequest.Status.VERIFIED).first()
    page.goto(f"{live_server.url}/admin/userdata_app/erasurerequest/{request.pk}/change/")
    if role == "viewer":
        assert page.locator("text=Execute erasure…").count() == 0
        assert "needs the permission" in page.inner_text(".erasure-missing-permissions")
        shot(page, f"admin-{role}-5-request")
        response = page.goto(f"{live_server.url}/admin/userdata_app/erasurerequest/{request.pk}/execute/")
        assert response.status == 403 and "Permission denied" in page.inner_text("#content")
        assert page.locator("#site-name").count() == 1  # the admin's page, not JSON
        shot(page, f"admin-{role}-6-forbidden")
        response = page.goto(f"{live_server.url}/admin/tenancy/tenant/{demo.tenant_id}/change/")
        assert response.status == 403 and page.locator("#site-name").count() == 1
    else:
        assert (
            page.locator("text=Execute erasure…").count() == 1
            and page.locator(".erasure-missing-permissions").count() == 0
        )
        shot(page, f"admin-{role}-5-request")
        page.click("text=Execute erasure…")
        page.wait_for_selector("input[type=submit][value='Yes, erase']")
        assert f"Erasure request #{request.pk}" in page.inner_text(".breadcrumbs")
        shot(page, f"admin-{role}-6-confirmation")

    # 5. "View site" leads to a page pointing to the admin and the API docs.
    page.goto(f"{live_server.url}/admin/")
    page.click("text=View site")
    page.wait_for_selector("h1:has-text('agentstate')")
    assert page.locator("a[href='/admin/']").count() == 1 and page.locator("a[href='/api/docs/']").count() == 1


@pytest.mark.parametrize("role", ["superuser", "officer", "viewer"])
def test_staff_read_each_frameworks_state(live_server, browser_page, demo, role):
    """Issue 29: from the session list, each framework's sessions and what they hold, a LangGraph
    thread's checkpoints step by step with its fork, an SDK branch's items as text."""
    page = browser_page
    page.set_viewport_size({"width": WIDTH, "height": 900})
    log_in(page, live_server, make_user(role).username)

    page.goto(f"{live_server.url}/admin/sessions_app/session/")
    page.click("#changelist-filter a:has-text('LangGraph')")
    page.wait_for_url(re.compile(r"framework=langgraph"))
    assert page.locator("td.field-framework_shown").all_inner_texts() == ["LangGraph"]
    assert page.locator("td.field-contents").all_inner_texts() == ["7 checkpoints"]
    assert_fits(page)
    shot(page, f"frameworks-{role}-1-langgraph-list")

    page.click("th.field-session_shown a")
    page.wait_for_selector(".langgraph-timeline")
    steps = [" ".join(t.split()) for t in page.locator(".langgraph-timeline td.step").all_inner_texts()]
    assert steps == ["-1", "0", "fork from step 0 1", "2", "1", "2", "3"]
    assert "No checkpoints" not in page.inner_text("#content")
    shot(page, f"frameworks-{role}-2-langgraph-session")
    page.click("text=The thread's page →")
    page.wait_for_selector("text=← The thread's session")
    assert "Thread weather-graph" in page.inner_text("h2.session-title")
    shot(page, f"frameworks-{role}-3-langgraph-thread")

    page.goto(f"{live_server.url}/admin/sessions_app/session/?framework=openai_agents")
    assert_fits(page)
    page.click("th.field-session_shown a:has-text('branch rome-instead')")
    page.wait_for_selector(".openai-items")
    kinds = page.locator(".openai-items tbody td:nth-child(2)").all_inner_texts()
    assert kinds == ["user", "assistant", "user", "tool call", "tool result", "assistant"]
    raw = page.locator(".openai-items details pre").first
    assert not raw.is_visible()
    page.locator(".openai-items details summary").first.click()
    assert raw.is_visible() and '"content": "Hi, I am Ada."' in raw.inner_text()
    shot(page, f"frameworks-{role}-4-openai-branch")

    page.goto(f"{live_server.url}/admin/sessions_app/session/?framework=adk")
    assert page.locator("td.field-contents").all_inner_texts() == ["4 events"]
    page.click("th.field-session_shown a")
    page.wait_for_selector("text=It is sunny in Paris, 21 C.")
    shot(page, f"frameworks-{role}-5-adk-session")
