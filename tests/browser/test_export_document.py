"""The printable subject-access export, the document sent to the person (issue 41, finding 8): at
1,400 px it reads like a letter at any depth of framework data. No label is narrower than its
longest word (nested tables once shrank them to a letter a line), and the demo subject's export
(ada's sessions of each framework, ``load_demo_data``) is under 10,000 px tall (it was 33,000)."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agentstate.tenancy.models import Tenant
from tests.browser.chromium import ARTIFACTS, needs_chromium
from tests.userdata_app.erasure_factories import compliance_group
from userdata_app import access_requests, services

pytestmark = [*needs_chromium, pytest.mark.django_db(transaction=True)]
WIDTH = 1400
PASSWORD = "correct horse battery"

# Each label's width and the width of its longest word set alone in the label's font.
LABEL_WIDTHS = """() => [...document.querySelectorAll('dt, th, .key')].map(label => {
    const probe = document.createElement('span');
    probe.style.cssText = 'position: absolute; visibility: hidden; white-space: nowrap; font: inherit';
    label.appendChild(probe);
    const words = label.firstChild.textContent.split(/\\s+/).filter(Boolean);
    const longest = Math.max(0, ...words.map(word => { probe.textContent = word; return probe.offsetWidth; }));
    probe.remove();
    return {label: label.textContent, width: label.getBoundingClientRect().width, longest};
})"""


def deeply_nested(depth: int):
    """A value as a framework nests it, ``depth`` objects and lists deep, with labels of several words."""
    value = {"tool_call_result": "done", "annotations_of_the_output": ["a" * 300]}
    for level in range(depth):
        value = {f"nested_step_{level}_of_the_plan": [value], "checkpoint_namespace_label": f"step {level}"}
    return value


def export_page(page, live_server, *, tenant, user_id: str):
    """Open the printable export of a verified access request for ``user_id``, as the officer."""
    request = access_requests.access_request_create(subjects=[(tenant, user_id)], reference="SAR-41")
    access_requests.access_request_verify(request=request, identity_check="reply from the registered address")
    page.goto(f"{live_server.url}/admin/userdata_app/accessrequest/{request.pk}/export.html")
    page.wait_for_selector("text=What we hold about you")


def assert_labels_whole(page):
    labels = page.evaluate(LABEL_WIDTHS)
    assert labels
    narrow = [label for label in labels if label["width"] + 0.5 < label["longest"]]
    assert not narrow, narrow[:5]


def test_the_printable_export_reads_like_a_letter(live_server, browser_page):
    call_command("load_demo_data", "--users", "1", stdout=None)
    acme = Tenant.objects.get(slug="demo-acme")
    services.user_datum_set(tenant=acme, user_id="deep", key="agent_plan", value=deeply_nested(14))
    officer = get_user_model().objects.create_user("officer", password=PASSWORD, is_staff=True)
    officer.groups.add(compliance_group())
    page = browser_page
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "officer")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector(".agentstate-dashboard")

    # The demo subject: ada, whose sessions are ADK's, LangGraph's and the Agents SDK's.
    export_page(page, live_server, tenant=acme, user_id="ada")
    body = page.inner_text("body")
    assert "It is sunny in Paris, 21 C." in body and "What is the weather in Oslo?" in body
    assert "Hi, I am Ada." in body
    assert_labels_whole(page)
    height = page.evaluate("document.documentElement.scrollHeight")
    page.screenshot(path=str(ARTIFACTS / "access-request-export.png"), full_page=True)
    assert height < 10_000, height

    # Any depth: a value as deep as the API takes (32 levels) keeps its labels whole and fits the page.
    export_page(page, live_server, tenant=acme, user_id="deep")
    assert_labels_whole(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    assert "step 13" in page.inner_text("body") and "step 0" in page.inner_text("body")
    page.screenshot(path=str(ARTIFACTS / "access-request-export-deep.png"), full_page=True)
