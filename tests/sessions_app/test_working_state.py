"""Working state on both stores: the database table (default) and Redis (``REDIS_URL``)."""

import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from agentstate.exceptions import InvalidInput, SessionEnded
from sessions_app import selectors, services, working_state
from sessions_app.models import Session, WorkingStateEntry

pytestmark = pytest.mark.django_db

TTL = 3600


@pytest.fixture(params=["database", "redis"])
def store(request, settings):
    """Select one store by settings, as a deployment would, and start it empty."""
    if request.param == "redis" and not settings.REDIS_URL:
        pytest.skip("the Redis store needs REDIS_URL")
    settings.WORKING_STATE_BACKEND = request.param
    settings.WORKING_STATE_TTL_SECONDS = TTL
    store = working_state.get_store()
    _forget_redis_keys(store)  # session pks repeat across tests on SQLite
    yield store
    _forget_redis_keys(store)


def _forget_redis_keys(store):
    if isinstance(store, working_state.RedisWorkingStateStore):
        keys = list(store.client.scan_iter(match=f"{store.prefix}*"))
        if keys:
            store.client.delete(*keys)


def _set_ttl(settings, seconds):
    settings.WORKING_STATE_TTL_SECONDS = seconds
    return working_state.get_store()


def _expire_now(store, session):
    """Make the session's entry reach its TTL without waiting for it."""
    if isinstance(store, working_state.RedisWorkingStateStore):
        store.client.pexpire(store._key(session.pk), 1)
        time.sleep(0.01)
    else:
        WorkingStateEntry.objects.filter(session=session).update(expires_at=timezone.now() - timedelta(seconds=1))


def _seconds_left(store, session) -> float:
    if isinstance(store, working_state.RedisWorkingStateStore):
        return store.client.pttl(store._key(session.pk)) / 1000
    return (WorkingStateEntry.objects.get(session=session).expires_at - timezone.now()).total_seconds()


def _session(tenant, session_id="s1") -> Session:
    return services.session_create(tenant=tenant, user_id="u1", session_id=session_id)


def _get(session):
    return selectors.working_state_get(session=session)


def test_a_new_session_has_empty_working_state(store, tenant):
    assert _get(_session(tenant)) == {}


def test_patch_merges_top_level_keys(store, tenant):
    session = _session(tenant)
    assert services.working_state_patch(session=session, changes={"a": 1, "nested": {"x": 1}}) == {
        "a": 1,
        "nested": {"x": 1},
    }
    result = services.working_state_patch(session=session, changes={"b": [2], "nested": {"y": 2}})
    assert result == {"a": 1, "b": [2], "nested": {"y": 2}}
    assert _get(session) == result


def test_a_null_value_removes_the_key(store, tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1, "b": 2})
    assert services.working_state_patch(session=session, changes={"a": None, "missing": None}) == {"b": 2}
    assert _get(session) == {"b": 2}
    services.working_state_patch(session=session, changes={"b": None})
    assert _get(session) == {}


def test_falsy_values_are_kept(store, tenant):
    session = _session(tenant)
    values = {"zero": 0, "false": False, "empty": "", "list": [], "object": {}}
    services.working_state_patch(session=session, changes=values)
    assert _get(session) == values


def test_replace_swaps_the_whole_object(store, tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1, "b": 2})
    assert services.working_state_replace(session=session, data={"c": 3}) == {"c": 3}
    assert _get(session) == {"c": 3}
    assert services.working_state_replace(session=session, data={}) == {}
    assert _get(session) == {}


def test_clear_empties_it(store, tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1})
    services.working_state_clear(session=session)
    assert _get(session) == {}


def test_working_state_is_per_session(store, tenant):
    a, b = _session(tenant, "a"), _session(tenant, "b")
    services.working_state_patch(session=a, changes={"who": "a"})
    services.working_state_patch(session=b, changes={"who": "b"})
    services.working_state_clear(session=a)
    assert (_get(a), _get(b)) == ({}, {"who": "b"})


@pytest.mark.parametrize(
    "changes",
    [[1], "x", None, {"a/b": 1}, {"": 1}, {"k" * 129: 1}, {"k\n": 1}, {"k": "a\x00"}, {"k": float("nan")}],
    ids=str,
)
def test_bad_changes_are_refused_and_change_nothing(store, tenant, changes):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"kept": 1})
    with pytest.raises(InvalidInput):
        services.working_state_patch(session=session, changes=changes)
    with pytest.raises(InvalidInput):
        services.working_state_replace(session=session, data=changes)
    assert _get(session) == {"kept": 1}


def test_end_discards_working_state_and_refuses_new_writes(store, tenant, django_capture_on_commit_callbacks):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1})
    with django_capture_on_commit_callbacks(execute=True):  # the end commits
        services.session_end(session=session)
    assert store.get(session.pk) == {}
    for write in (
        lambda: services.working_state_patch(session=session, changes={"b": 2}),
        lambda: services.working_state_replace(session=session, data={"b": 2}),
    ):
        with pytest.raises(SessionEnded):
            write()
    assert store.get(session.pk) == {} and _get(session) == {}


def test_delete_discards_working_state(store, tenant, django_capture_on_commit_callbacks):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1})
    with django_capture_on_commit_callbacks(execute=True):  # the delete commits
        services.session_delete(session=session)
    assert store.get(session.pk) == {}
    assert store.count_many([session.pk]) == 0


def test_the_sweep_removes_what_a_delete_left_behind_and_live_sessions_keep_theirs(store, tenant):
    """Issue 23, defect 7: a process that dies between a delete's (or an erasure's) commit and the
    clear leaves the deleted session's working state in Redis, which the sweep of
    ``erasure_storage_cleanup`` removes; the database store's entry goes with its session."""
    gone, live = _session(tenant, "gone"), _session(tenant, "live")
    for session in (gone, live):
        services.working_state_patch(session=session, changes={"a": 1})
    services.session_delete(session=gone)  # its clear waits for a commit the test's transaction never makes
    left_behind = 1 if store.outlives_its_session else 0
    assert store.count_many([gone.pk]) == left_behind

    assert services.working_state_orphans_clear() == left_behind
    assert store.count_many([gone.pk]) == 0
    assert store.get(live.pk) == {"a": 1}


class _Abort(Exception):
    pass


@pytest.mark.parametrize("finish", ["end", "delete"])
def test_an_end_or_delete_that_rolls_back_keeps_the_working_state(
    store, tenant, finish, django_capture_on_commit_callbacks
):
    """Issue 9, defect 4: the store is outside the database's transaction, so it is cleared only
    once the end or delete has committed; one rolled back (here by an error after it, in the same
    transaction) leaves the session and its working state as they were."""
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1})
    # The call and the error after it share one transaction: that rollback is the point.
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(_Abort), transaction.atomic():  # noqa: PT012
        getattr(services, f"session_{finish}")(session=session)
        raise _Abort
    stored = Session.objects.get(pk=session.pk)
    assert stored.ended_at is None
    assert store.get(session.pk) == {"a": 1} and _get(stored) == {"a": 1}


def test_checkpoint_reads_from_the_selected_store(store, tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1, "b": 2})
    assert services.checkpoint_create(session=session, label="cp", include_keys=["b"]).state == {"b": 2}


def test_count_and_clear_many_sessions(store, tenant):
    sessions = [_session(tenant, f"s{n}") for n in range(4)]
    for session in sessions[:3]:
        services.working_state_patch(session=session, changes={"n": session.session_id})
    pks = [s.pk for s in sessions]
    assert store.count_many(pks) == 3
    store.clear_many(pks[:2])
    assert store.count_many(pks) == 1
    assert [_get(s) for s in sessions] == [{}, {}, {"n": "s2"}, {}]


# --- TTL --------------------------------------------------------------------------------------


def test_a_write_sets_the_configured_ttl(store, tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1})
    assert TTL - 5 < _seconds_left(store, session) <= TTL


def test_each_write_restarts_the_ttl(store, tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"a": 1})
    if isinstance(store, working_state.RedisWorkingStateStore):
        store.client.expire(store._key(session.pk), 60)
    else:
        WorkingStateEntry.objects.filter(session=session).update(expires_at=timezone.now() + timedelta(seconds=60))
    services.working_state_patch(session=session, changes={"b": 2})
    assert _seconds_left(store, session) > TTL - 5
    assert _get(session) == {"a": 1, "b": 2}


def test_expired_state_reads_empty_and_a_later_patch_starts_afresh(store, tenant):
    session = _session(tenant)
    services.working_state_patch(session=session, changes={"stale": 1})
    _expire_now(store, session)
    assert _get(session) == {}
    assert store.count_many([session.pk]) == 0
    assert services.working_state_patch(session=session, changes={"fresh": 2}) == {"fresh": 2}


def test_a_tiny_ttl_from_settings_expires_for_real(store, tenant, settings):
    session = _session(tenant)
    tiny = _set_ttl(settings, 1)
    services.working_state_patch(session=session, changes={"a": 1})
    assert tiny.get(session.pk) == {"a": 1}
    time.sleep(1.1)
    assert _get(session) == {}


def test_purge_command_deletes_only_expired_entries(store, tenant):
    expired, live = _session(tenant, "expired"), _session(tenant, "live")
    services.working_state_patch(session=expired, changes={"a": 1})
    services.working_state_patch(session=live, changes={"b": 2})
    _expire_now(store, expired)
    out = StringIO()
    call_command("purge_working_state", stdout=out)
    purged = 0 if isinstance(store, working_state.RedisWorkingStateStore) else 1
    assert f"Purged {purged} expired" in out.getvalue()
    assert _get(live) == {"b": 2} and _get(expired) == {}
    if not isinstance(store, working_state.RedisWorkingStateStore):
        assert list(WorkingStateEntry.objects.values_list("session_id", flat=True)) == [live.pk]


def test_the_database_store_never_culls_live_sessions(settings, tenant):
    """Django's database cache would drop a third of the entries past its 300 MAX_ENTRIES."""
    settings.WORKING_STATE_BACKEND = "database"
    Session.objects.bulk_create(Session(tenant=tenant, user_id="u1", session_id=f"s{n}") for n in range(350))
    sessions = list(Session.objects.filter(tenant=tenant).order_by("id"))
    for session in sessions:
        services.working_state_patch(session=session, changes={"n": session.session_id})
    assert WorkingStateEntry.objects.count() == 350
    assert all(_get(session) == {"n": session.session_id} for session in sessions)
