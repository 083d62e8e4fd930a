"""tests/db_reset.py: a transactional test's reset leaves the database as Django's flush does."""

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection

from tests import db_reset


def _state() -> dict[str, object]:
    """Every table's row count, and what post_migrate made (content types and permissions), by
    their names: a flush makes them again under new ids."""
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        counts = {}
        for table in sorted(tables):
            cursor.execute(f"SELECT COUNT(*) FROM {qn(table)}")  # noqa: S608 (a quoted model table)
            counts[table] = cursor.fetchone()[0]
    return {
        "counts": counts,
        "content types": sorted(ContentType.objects.values_list("app_label", "model")),
        "permissions": sorted(Permission.objects.values_list("content_type__app_label", "codename", "name")),
    }


@pytest.mark.django_db(transaction=True)
def test_a_reset_leaves_what_djangos_flush_leaves():
    """Rows in many tables (a session's history, a person's data and memory, a user with a
    permission, an admin log entry) are all gone, and what post_migrate made is there."""
    call_command("flush", verbosity=0, interactive=False)
    flushed = _state()
    db_reset.reset("default")  # a baseline is kept by the first reset in a process (Django's flush)
    assert _state() == flushed
    _fill()
    assert sum(_state()["counts"].values()) > sum(flushed["counts"].values()) + 8
    db_reset.reset("default")
    assert _state() == flushed


@pytest.mark.django_db(transaction=True)
def test_a_reset_after_a_test_changed_what_post_migrate_made_is_djangos_flush():
    call_command("flush", verbosity=0, interactive=False)
    flushed = _state()
    db_reset.reset("default")
    Permission.objects.filter(codename="add_logentry").update(name="renamed")
    ContentType.objects.create(app_label="gone", model="gone")
    db_reset.reset("default")
    assert _state() == flushed


def _fill() -> None:
    """A tenant's session with messages, a round and a checkpoint, a person's datum and memory, and
    a user with a permission who made an admin log entry."""
    from django.contrib.admin.models import ADDITION, LogEntry
    from django.contrib.auth import get_user_model

    from agentstate.tenancy.services import tenant_get_or_create
    from sessions_app import services
    from userdata_app import services as userdata_services
    from userdata_app.memory.services import memory_batch

    tenant = tenant_get_or_create(slug="acme")
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.message_append(session=session, messages=[{"content": "hello"}])
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={"a": 1})
    services.checkpoint_create(session=session, label="cp")
    userdata_services.user_datum_set(tenant=tenant, user_id="u1", key="email", value="me@example.com")
    memory_batch(tenant=tenant, ops=[{"op": "put", "namespace": ["users", "u1"], "key": "k", "value": {"v": 1}}])
    user = get_user_model().objects.create_user("someone")
    user.user_permissions.add(Permission.objects.first())
    LogEntry.objects.log_actions(user.pk, [user], ADDITION)
