"""Verifying a request asks how the requester's identity was checked (issue 41, finding 15): an
erasure request's "Mark verified" asks what an access request's "Mark identity verified" asks, and
staff read the answer, who gave it and when on the request's page; ``erase_user`` records one too."""

import html
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from tests.admin.staff import login, staff
from tests.userdata_app.erasure_factories import subject_data_create
from userdata_app import access_requests, erasure
from userdata_app.models import ErasureRequest

pytestmark = pytest.mark.django_db
QUESTION = "How the identity was verified"


def text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.fixture
def officer(db):
    return staff("officer", groups=["Compliance"])


def test_both_requests_ask_how_the_identity_was_verified(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=0)
    pages = {
        "erasure": reverse(
            "admin:userdata_app_erasurerequest_lifecycle",
            args=[erasure.erasure_request_create(subjects=[(tenant, "alice")]).pk, "verify"],
        ),
        "access": reverse(
            "admin:userdata_app_accessrequest_step",
            args=[access_requests.access_request_create(subjects=[(tenant, "alice")]).pk, "verify"],
        ),
    }
    for kind, url in pages.items():
        page = client.get(url).content.decode()
        assert QUESTION in text(page) and 'name="identity_check"' in page, kind
        assert "Record how you checked that the requester is the person" in text(page), kind


def test_an_erasure_is_verified_only_with_the_answer_which_its_page_then_shows(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=0)
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")])
    verify = reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, "verify"])

    refused = client.post(verify, {"identity_check": "  "})
    request.refresh_from_db()
    assert refused.status_code == 200 and "This field is required." in refused.content.decode()
    assert request.status == ErasureRequest.Status.RECEIVED

    assert client.post(verify, {"identity_check": "reply from the registered address"}).status_code == 302
    request.refresh_from_db()
    assert request.status == ErasureRequest.Status.VERIFIED
    page = text(client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])).content.decode())
    assert "Identity verified how: reply from the registered address" in page
    history = page[page.index("History") :]
    assert "officer Received → Verified reply from the registered address" in history


def test_erase_user_records_how_the_identity_was_checked(tenant):
    subject_data_create(tenant=tenant, user_id="alice", sessions=0)
    subject_data_create(tenant=tenant, user_id="bob", sessions=0)
    out = StringIO()
    # The storage clean-up runs once (--storage-timeout 0): in the test's transaction, which never
    # commits, the emptied tables' statistics stay busy and the command retried them for 10 s.
    once = ("--yes", "--storage-timeout", "0")
    call_command("erase_user", "--subject", f"{tenant.slug}:alice", *once, "--identity-check", "ID card", stdout=out)
    call_command("erase_user", "--subject", f"{tenant.slug}:bob", *once, stdout=out)

    alice, bob = ErasureRequest.objects.order_by("id")
    assert erasure.erasure_identity_check(request=alice) == "ID card"
    assert erasure.erasure_identity_check(request=bob) == "not recorded: erased with manage.py erase_user"
