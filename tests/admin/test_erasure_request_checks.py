"""What the erasure pages tell staff before and after they act (issue 29's minor points): a
subject id with a stray space, a preview that finds nothing, the receipt's request details and
its development key, and the steps a staff member without the Compliance group is not offered."""

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.admin.staff import login, staff
from tests.userdata_app.erasure_factories import erasure_request_added, subject_data_create, verified_request
from userdata_app import erasure
from userdata_app.models import ErasureRequest

pytestmark = pytest.mark.django_db


@pytest.fixture
def officer(db):
    return staff("officer", groups=["Compliance"])


def change_page(client, request) -> str:
    return client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])).content.decode()


def test_a_subject_id_with_a_space_is_taken_when_data_is_held_under_it(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="ada ", sessions=0)  # an id the API did store with a space

    assert erasure_request_added(client, tenant, "ada ").subjects.get().user_id == "ada "


def test_a_subject_id_with_a_stray_space_that_holds_nothing_is_refused(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="ada", sessions=0)
    add = reverse("admin:userdata_app_erasurerequest_add")
    form = {
        "scope": "everything",
        "received_at_0": "2026-01-05",
        "received_at_1": "10:00:00",
        "subjects-TOTAL_FORMS": "1",
        "subjects-INITIAL_FORMS": "0",
        "subjects-MIN_NUM_FORMS": "1",
        "subjects-MAX_NUM_FORMS": "1000",
        "subjects-0-tenant": str(tenant.pk),
        "subjects-0-user_id": "ada ",
    }

    page = client.post(add, form).content.decode()

    assert "begins or ends with a space and nothing is held under it" in page
    assert "type it without the space (ada)" in page
    spaces = client.post(add, {**form, "subjects-0-user_id": "   "}).content.decode()
    assert "is only spaces and nothing is held under it in tenant acme: type the person&#x27;s user id" in spaces
    assert not ErasureRequest.objects.exists()


def test_a_preview_of_nothing_warns_and_so_does_mark_verified(client, officer, tenant):
    login(client, officer)
    request = erasure.erasure_request_create(subjects=[(tenant, "nobody")])

    assert "Nothing found for these subjects" in change_page(client, request)
    verify = client.get(reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, "verify"]))
    assert "Nothing is held under these subjects" in verify.content.decode()

    subject_data_create(tenant=tenant, user_id="someone", sessions=0)
    held = erasure.erasure_request_create(subjects=[(tenant, "someone")])
    assert "Nothing found" not in change_page(client, held)


def test_the_receipt_shows_the_request_and_warns_of_the_development_key(client, officer, tenant, settings):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="ada", sessions=0)
    request = verified_request(subjects=[(tenant, "ada")], scope="user_data")  # requested by "ticket 42"
    erasure.erasure_execute(request=request)

    page = change_page(client, request)

    assert "Requested by <strong>ticket 42</strong>" in page
    assert f"received {timezone.localdate(request.received_at)}, due {request.due_on}." in page
    assert "Signed with the development key “dev”" in page
    document = client.get(reverse("admin:userdata_app_erasurerequest_receipt", args=[request.pk])).json()
    assert (document["requested_by"], document["due_on"]) == ("ticket 42", request.due_on.isoformat())


def test_a_receipt_under_a_real_key_carries_no_warning(client, officer, tenant, settings):
    settings.ERASURE_HMAC_KEYS = {"k1": "a-real-secret-0123456789"}
    settings.ERASURE_HMAC_KEY_ID = "k1"
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="ada", sessions=0)
    request = verified_request(subjects=[(tenant, "ada")], scope="user_data")
    erasure.erasure_execute(request=request)

    assert "development key" not in change_page(client, request)
    assert "development key" not in client.get(reverse("admin:index")).content.decode()


def test_the_dashboard_warns_while_receipts_are_signed_with_the_development_key(client, officer, fresh_dashboard):
    login(client, officer)

    assert "Erasure receipts are signed with the development key" in client.get(reverse("admin:index")).content.decode()


def test_staff_without_compliance_are_told_the_review_steps_too(client, tenant):
    viewer = staff("viewer", perms=["userdata_app.view_erasurerequest", "userdata_app.view_erasuresubject"])
    login(client, viewer)
    request = erasure.erasure_request_create(subjects=[(tenant, "ada")])

    page = change_page(client, request)

    assert "Some steps are not offered to your account" in page
    assert "<strong>Mark verified, extend deadline, put on legal hold, reject</strong>: needs the permission" in page
    assert "<strong>Export subject data</strong>: needs the permission" in page
