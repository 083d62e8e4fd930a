"""Migration 0022 moves LangGraph's retention rule out of the core's policy columns into the
policy's ``backend_rules``, and back when undone: no tenant's rule is lost either way."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessions_app.models import RetentionPolicy

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BEFORE = [("sessions_app", "0021_retention_run_derived")]
AFTER = [("sessions_app", "0022_retention_backend_rules")]


def test_a_policys_checkpoint_rule_survives_the_migration_both_ways(tenant, other_tenant):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps.get_model("sessions_app", "RetentionPolicy")
        old.objects.create(tenant_id=tenant.pk, keep_latest_checkpoints=3, keep_latest_rounds=5)
        old.objects.create(tenant_id=other_tenant.pk, keep_latest_rounds=7)
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        policies = {p.tenant_id: p for p in RetentionPolicy.objects.all()}
        assert policies[tenant.pk].rule("keep_latest_checkpoints") == 3
        assert policies[tenant.pk].keep_latest_rounds == 5
        assert policies[other_tenant.pk].backend_rules == {}

        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        old = executor.loader.project_state(BEFORE).apps.get_model("sessions_app", "RetentionPolicy")
        assert dict(old.objects.values_list("tenant_id", "keep_latest_checkpoints")) == {
            tenant.pk: 3,
            other_tenant.pk: None,
        }
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
