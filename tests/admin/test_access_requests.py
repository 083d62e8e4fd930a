"""Subject-access requests, a workflow of their own (issue 29): received, identity verified (how,
by whom, when), due one month after receipt, exported as JSON and as a printable document,
fulfilled; counted on the dashboard apart from erasure requests. SQLite and PostgreSQL."""

import json
import re
from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe

from agentstate.exceptions import Conflict, InvalidInput
from agentstate.streaming import materialized
from tests.admin.staff import login, staff
from tests.api.assertions import streamed
from tests.userdata_app.erasure_factories import subject_data_create
from userdata_app import access_requests, erasure
from userdata_app.access_log.models import AccessEntry
from userdata_app.admin.export_document import document_html_pieces, readable_time
from userdata_app.erasure.registry import subject_hash
from userdata_app.models import AccessRequest, ErasureRequest

pytestmark = pytest.mark.django_db

Status = AccessRequest.Status
ADD = reverse("admin:userdata_app_accessrequest_add")


def change_url(request):
    return reverse("admin:userdata_app_accessrequest_change", args=[request.pk])


def step_url(request, step):
    return reverse("admin:userdata_app_accessrequest_step", args=[request.pk, step])


@pytest.fixture
def officer(db):
    return staff("officer", groups=["Compliance"])


def access_request_added(client, tenant, user_id: str) -> AccessRequest:
    """Record a request through the admin's add form, as an officer types it."""
    response = client.post(
        ADD,
        {
            "requester": "the person",
            "reference": "SAR-7",
            "received_at_0": "2026-01-31",
            "received_at_1": "10:00:00",
            "notes": "",
            "subjects-TOTAL_FORMS": "1",
            "subjects-INITIAL_FORMS": "0",
            "subjects-MIN_NUM_FORMS": "1",
            "subjects-MAX_NUM_FORMS": "1000",
            "subjects-0-tenant": str(tenant.pk),
            "subjects-0-user_id": user_id,
        },
    )
    assert response.status_code == 302, response.context["errors"] if response.context else response
    return AccessRequest.objects.latest("id")


def test_a_request_is_due_one_calendar_month_after_receipt_or_as_configured(tenant, settings):
    received = datetime(2026, 1, 31, 10, tzinfo=UTC)

    assert access_requests.access_request_create(subjects=[(tenant, "ada")], received_at=received).due_on == date(
        2026, 2, 28
    )
    settings.ACCESS_REQUEST_DUE_MONTHS = 2
    assert access_requests.access_request_create(subjects=[(tenant, "ada")], received_at=received).due_on == date(
        2026, 3, 31
    )


def test_the_steps_follow_the_workflow_and_record_who_and_when(tenant, officer):
    request = access_requests.access_request_create(subjects=[(tenant, "ada")])

    with pytest.raises(Conflict):
        access_requests.access_request_fulfil(request=request, actor=officer)  # not verified yet
    with pytest.raises(InvalidInput, match="identity_check"):
        access_requests.access_request_verify(request=request, identity_check=" ", actor=officer)
    access_requests.access_request_verify(request=request, identity_check="reply from account e-mail", actor=officer)
    access_requests.access_request_fulfil(request=request, actor=officer)

    assert request.status == Status.FULFILLED
    assert (request.identity_check, request.verified_by_name, request.fulfilled_by_name) == (
        "reply from account e-mail",
        "officer",
        "officer",
    )
    assert request.verified_at <= request.fulfilled_at
    with pytest.raises(Conflict):
        access_requests.access_request_reject(request=request, reason="late", actor=officer)

    refused = access_requests.access_request_create(subjects=[(tenant, "ada")])
    access_requests.access_request_reject(request=refused, reason="identity not established", actor=officer)
    assert (refused.status, refused.rejection_reason, refused.status_changed_by_name) == (
        Status.REJECTED,
        "identity not established",
        "officer",
    )


def test_an_officer_answers_a_request_from_receipt_to_fulfilment_without_an_erasure_request(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="ada", sessions=1, messages=2)
    request = access_request_added(client, tenant, "ada")
    assert request.due_on == date(2026, 2, 28) and request.reference == "SAR-7"

    page = client.get(change_url(request)).content.decode()
    assert "Mark identity verified" in page and "Export (JSON)" not in page  # identity first
    assert client.get(reverse("admin:userdata_app_accessrequest_export_json", args=[request.pk])).status_code == 403

    response = client.post(step_url(request, "verify"), {"identity_check": "reply from the account's e-mail"})
    assert response.status_code == 302
    page = client.get(change_url(request)).content.decode()
    assert "reply from the account&#x27;s e-mail" in page and "Export (printable)" in page

    exported = client.get(reverse("admin:userdata_app_accessrequest_export_json", args=[request.pk]))
    assert exported["Content-Disposition"] == f'attachment; filename="access-request-{request.pk}.json"'
    document = json.loads(streamed(exported))
    assert document["access_request"] == {
        "reference": "SAR-7",
        "received_at": request.received_at.isoformat(),
        "due_on": "2026-02-28",
    }
    [subject] = document["subjects"]
    assert subject["user_id"] == "ada" and len(subject["sessions"][0]["messages"]) == 2

    printable = client.get(reverse("admin:userdata_app_accessrequest_export_html", args=[request.pk]))
    html = streamed(printable).decode()
    assert printable.status_code == 200 and "What we hold about you" in html and "SAR-7" in html
    assert "hello from ada #1" in html and "ada@example.com" in html
    created = subject["sessions"][0]["created_at"]
    assert f'<time datetime="{created}">' in html  # a date people read, the exact value kept
    # Both exports are in the access log, under the person's keyed hash.
    exports = AccessEntry.objects.filter(action=AccessEntry.Action.EXPORT, model="userdata_app.AccessRequest")
    assert [(e.subject_hash, e.object_pks) for e in exports] == [
        (subject_hash(tenant_slug=tenant.slug, user_id="ada")[1], [str(request.pk)])
    ] * 2

    assert client.post(step_url(request, "fulfil")).status_code == 302
    request.refresh_from_db()
    assert request.status == Status.FULFILLED and request.fulfilled_by_name == "officer"
    assert not ErasureRequest.objects.exists()


def test_a_large_subjects_printable_export_is_streamed_as_the_page_read_whole(client, officer, tenant, settings):
    settings.PAGE_MAX_BYTES = 8 * 1024  # the export's rows read in many batches
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="ada", sessions=3, messages=400)
    request = access_requests.access_request_create(subjects=[(tenant, "ada")], reference="SAR-8")
    access_requests.access_request_verify(request=request, identity_check="in person", actor=officer)

    response = client.get(reverse("admin:userdata_app_accessrequest_export_html", args=[request.pk]))
    with CaptureQueriesContext(connection) as queries:
        chunks = iter(response.streaming_content)
        first = next(chunks)
        queried_before_the_first_chunk = len(queries)
        html = (first + b"".join(chunks)).decode()

    assert queried_before_the_first_chunk < len(queries)  # sent while the export is still being read
    # The page as it was built whole, from the same document read into memory.
    generated_at = re.search(r'generated <time datetime="([^"]+)">', html).group(1)
    document = {**materialized(access_requests.access_request_document(request=request)), "generated_at": generated_at}
    body = mark_safe("".join(document_html_pieces(document)))  # noqa: S308 (escaped as written)
    context = {"object": request, "generated_at": readable_time(generated_at), "body": body}
    assert html == render_to_string("admin/userdata_app/accessrequest/export.html", context)
    assert html.count("hello from ada #") == 1200


def test_a_subject_with_nothing_held_is_flagged_before_the_request_is_answered(client, officer, tenant):
    login(client, officer)
    request = access_requests.access_request_create(subjects=[(tenant, "ada")])

    assert "Nothing found for these subjects" in client.get(change_url(request)).content.decode()


def test_staff_without_compliance_are_told_which_steps_they_lack(client, tenant):
    viewer = staff("viewer", perms=["userdata_app.view_accessrequest", "userdata_app.view_accesssubject"])
    login(client, viewer)
    request = access_requests.access_request_create(subjects=[(tenant, "ada")])

    page = client.get(change_url(request)).content.decode()

    assert "<strong>Mark identity verified, reject</strong>: needs the permission" in page
    assert step_url(request, "verify") not in page
    assert client.post(step_url(request, "verify"), {"identity_check": "x"}).status_code == 403


def test_the_dashboard_counts_access_requests_apart_from_erasures(client, officer, tenant, fresh_dashboard):
    login(client, officer)
    overdue = timezone.now() - timedelta(days=45)
    access_requests.access_request_create(subjects=[(tenant, "ada")], received_at=overdue)
    access_requests.access_request_create(subjects=[(tenant, "bob")])
    erasure.erasure_request_create(subjects=[(tenant, "cy")])

    dashboard = client.get(reverse("admin:index")).context

    assert dict(dashboard["access_requests"]) == {"open": 2, "overdue": 1}
    assert dict(dashboard["erasures"]) == {"open": 1, "overdue": 0}
    html = client.get(reverse("admin:index")).content.decode()
    assert "open access requests" in html and "open erasure requests" in html
