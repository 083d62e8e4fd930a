"""What an erasure does outside its database transaction, and only once it has committed: working
state in Redis (issue 9, defect 4), PostgreSQL's planner statistics (defect 5), SQLite's WAL file
(defect 2)."""
import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError

from sessions_app import working_state
from sessions_app.models import Session
from userdata_app import erasure
from userdata_app.models import ErasedSubject, ErasureRequest
from tests.userdata_app.erasure_factories import subject_data_create, verified_request

Scope = ErasureRequest.Scope
Status = ErasureRequest.Status


@pytest.fixture
def officer(db):
    return get_user_model().objects.create_user("officer", password="pw", is_staff=True)


@pytest.fixture(params=["database", "redis"])
def store(request, settings):
    if request.param == "redis" and not settings.REDIS_URL:
        pytest.skip("the Redis store needs REDIS_URL")
    settings.WORKING_STATE_BACKEND = request.param
    return working_state.get_store()


def _working_state(store, tenant, user_id) -> dict[int, dict]:
    return {pk: store.get(pk) for pk in Session.objects.filter(tenant=tenant, user_id=user_id).values_list("pk", flat=True)}


def _fail_with_residue(monkeypatch):
    monkeypatch.setattr(erasure.execution.userdata_services, "subject_user_data_erase", lambda **kw: 0)


def _fail_with_a_database_error(monkeypatch):
    def refuse(*args, **kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(ErasedSubject.objects, "bulk_create", refuse)


@pytest.mark.parametrize("failure", [_fail_with_residue, _fail_with_a_database_error], ids=["residue", "database error"])
def test_an_erasure_that_rolls_back_leaves_the_working_state_and_one_that_commits_clears_it(
    store, tenant, officer, monkeypatch, failure, django_capture_on_commit_callbacks
):
    subject_data_create(tenant=tenant, user_id="alice")
    before = _working_state(store, tenant, "alice")
    assert len(before) == 2 and all(state == {"current_subtask": "task of alice"} for state in before.values())
    request = verified_request(subjects=[(tenant, "alice")], scope=Scope.EVERYTHING, actor=officer)

    failure(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(erasure.ErasureFailed):
        erasure.erasure_execute(request=request, actor=officer)
    assert {pk: store.get(pk) for pk in before} == before  # the rollback changed nothing anywhere
    request.refresh_from_db()
    assert request.status == Status.FAILED

    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        erasure.erasure_execute(request=request, actor=officer)
    assert {pk: store.get(pk) for pk in before} == dict.fromkeys(before, {})
    assert store.count_many(list(before)) == 0
