"""An officer checking what is held about a subject, or why a session went, opens the pages of
every record that holds process state or a retention decision: the Compliance group may view them
(and change none of them)."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from tests.userdata_app.erasure_factories import compliance_group

pytestmark = pytest.mark.django_db

FRAMEWORK_AND_RETENTION_PAGES = [
    "sessions_app_langgraphthread",
    "sessions_app_langgraphcheckpoint",
    "sessions_app_langgraphwrite",
    "sessions_app_adkevent",
    "sessions_app_retentionpolicy",
    "sessions_app_retentionrun",
    "userdata_app_adkuserstate",
    "userdata_app_memoryitem",
    "userdata_app_artifact",
]


@pytest.fixture
def officer_client(client):
    user = get_user_model().objects.create_user("officer", is_staff=True)
    user.groups.add(compliance_group())
    client.force_login(user)
    return client


@pytest.mark.parametrize("page", FRAMEWORK_AND_RETENTION_PAGES)
def test_the_compliance_group_views_framework_and_retention_records(officer_client, page):
    assert officer_client.get(reverse(f"admin:{page}_changelist")).status_code == 200


def test_the_compliance_group_changes_no_retention_policy(officer_client):
    assert officer_client.get(reverse("admin:sessions_app_retentionpolicy_add")).status_code == 403
