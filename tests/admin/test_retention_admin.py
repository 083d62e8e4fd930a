"""Staff edit retention policies in the admin (validated by the service the API and the command
use) and see the last retention runs on the dashboard."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from sessions_app import services
from sessions_app.models import RetentionPolicy, RetentionRun

pytestmark = pytest.mark.django_db

RULES = (
    "delete_ended_after_days",
    "end_idle_after_days",
    "keep_latest_rounds",
    "keep_latest_checkpoints",
    "drop_messages_after_days",
)


@pytest.fixture
def admin_client(client):
    client.force_login(get_user_model().objects.create_superuser("root"))
    return client


def form(**rules):
    return {name: rules.get(name, "") for name in RULES}


@pytest.mark.needs_backends("langgraph")
def test_staff_add_and_change_a_policy_through_the_admin(admin_client, tenant):
    response = admin_client.post(
        reverse("admin:sessions_app_retentionpolicy_add"),
        {"tenant": tenant.pk, **form(delete_ended_after_days=30, keep_latest_rounds=5)},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    policy = RetentionPolicy.objects.get(tenant=tenant)
    assert (policy.delete_ended_after_days, policy.keep_latest_rounds, policy.drop_messages_after_days) == (30, 5, None)

    response = admin_client.post(
        reverse("admin:sessions_app_retentionpolicy_change", args=[tenant.pk]),
        form(keep_latest_checkpoints=3, drop_messages_after_days=90),
    )
    assert response.status_code == 302
    policy.refresh_from_db()
    checkpoints = policy.rule("keep_latest_checkpoints")
    assert (policy.delete_ended_after_days, checkpoints, policy.drop_messages_after_days) == (
        None,
        3,
        90,
    )


def test_a_bad_rule_is_shown_beside_its_field_and_nothing_is_saved(admin_client, tenant):
    services.retention_policy_save(tenant=tenant, keep_latest_rounds=5)

    response = admin_client.post(
        reverse("admin:sessions_app_retentionpolicy_change", args=[tenant.pk]), form(keep_latest_rounds=0)
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["keep_latest_rounds"] == [
        "must be a whole number of items from 1 to 2147483647, or empty (keep everything)."
    ]
    assert RetentionPolicy.objects.get(tenant=tenant).keep_latest_rounds == 5


def test_runs_are_read_only_and_the_dashboard_shows_the_last_ones(admin_client, tenant, fresh_dashboard):
    services.retention_policy_save(tenant=tenant, delete_ended_after_days=1)
    run = services.retention_apply(dry_run=True)

    page = admin_client.get(reverse("admin:index")).content.decode()
    runs = page[page.index("Last retention runs") :]
    assert reverse("admin:sessions_app_retentionrun_change", args=[run.pk]) in runs
    assert "dry run" in runs and "all tenants" in runs
    change = admin_client.get(reverse("admin:sessions_app_retentionrun_change", args=[run.pk]))
    assert change.status_code == 200 and b'name="dry_run"' not in change.content
    assert (
        admin_client.post(reverse("admin:sessions_app_retentionrun_delete", args=[run.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert RetentionRun.objects.count() == 1


def test_the_dashboard_says_when_retention_never_ran(admin_client, fresh_dashboard):
    assert "No retention run yet" in admin_client.get(reverse("admin:index")).content.decode()
