"""The Support group its data migration ships (issue 29): its members read sessions and every
framework's state, and open nothing that holds people's data or decides on their requests."""

import pytest
from django.urls import reverse

from sessions_app.models import Session
from tests.admin.staff import login, staff
from tests.userdata_app.erasure_factories import subject_data_create, support_group
from userdata_app.migrations._grants import SUPPORT_GROUP

pytestmark = pytest.mark.django_db

SESSIONS_AND_FRAMEWORK_STATE = [
    "sessions_app_session",
    "sessions_app_message",
    "sessions_app_round",
    "sessions_app_checkpoint",
    "sessions_app_agenttransition",
    "sessions_app_adkevent",
    "sessions_app_adkappstate",
    "sessions_app_langgraphthread",
    "sessions_app_langgraphcheckpoint",
    "sessions_app_langgraphwrite",
]
PEOPLES_DATA_AND_COMPLIANCE = [
    "userdata_app_userdatum",
    "userdata_app_adkuserstate",
    "userdata_app_memoryitem",
    "userdata_app_erasurerequest",
    "userdata_app_accessrequest",
    "userdata_app_erasedsubject",
    "sessions_app_retentionpolicy",
]


@pytest.fixture
def support_client(client):
    return login(client, staff("helpdesk", groups=[SUPPORT_GROUP]))


def test_the_support_group_has_view_permissions_only():
    codenames = set(support_group().permissions.values_list("codename", flat=True))

    assert codenames and all(c.startswith("view_") for c in codenames)
    assert "view_session" in codenames and "view_userdatum" not in codenames


@pytest.mark.parametrize("page", SESSIONS_AND_FRAMEWORK_STATE)
def test_support_reads_sessions_and_framework_state(support_client, page):
    assert support_client.get(reverse(f"admin:{page}_changelist")).status_code == 200


@pytest.mark.parametrize("page", PEOPLES_DATA_AND_COMPLIANCE)
def test_support_opens_no_user_data_memories_or_compliance_pages(support_client, page):
    assert support_client.get(reverse(f"admin:{page}_changelist")).status_code == 403


def test_support_opens_a_session_and_its_messages_but_changes_nothing(support_client, tenant):
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=2)
    session = Session.objects.get()

    page = support_client.get(reverse("admin:sessions_app_session_change", args=[session.pk]))
    index = support_client.get(reverse("admin:index")).content.decode()

    assert page.status_code == 200
    assert "have permission to view or edit anything" not in index
    assert "Sessions" in index and "User data" not in index
    # The dashboard's compliance cards are not theirs.
    assert "open erasure requests" not in index and "open access requests" not in index
    assert support_client.post(reverse("admin:sessions_app_session_delete", args=[session.pk])).status_code == 403
