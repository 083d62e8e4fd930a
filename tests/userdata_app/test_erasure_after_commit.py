"""What an erasure does outside its database transaction, and only once it has committed: working
state in Redis (issue 9, defect 4), PostgreSQL's planner statistics (defect 5), SQLite's WAL file
(defect 2); and a crash between that commit and the clean-up (issue 23, defect 7)."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from html import escape
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection

from agentstate.subjects import wal_truncate
from sessions_app import working_state
from sessions_app.models import Checkpoint, Session
from tests.fresh_process import ROOT
from tests.redis_server import redis_server_started
from tests.userdata_app.erasure_factories import subject_data_create, verified_request
from tests.userdata_app.residue import pg_stats_text
from userdata_app import erasure
from userdata_app.models import ErasedSubject, ErasureRequest

Scope = ErasureRequest.Scope
Status = ErasureRequest.Status


@pytest.fixture
def officer(db):
    return get_user_model().objects.create_user("officer", is_staff=True)


@pytest.fixture(params=["database", "redis"])
def store(request, settings):
    if request.param == "redis" and not settings.REDIS_URL:
        pytest.skip("the Redis store needs REDIS_URL")
    settings.WORKING_STATE_BACKEND = request.param
    return working_state.get_store()


def _working_state(store, tenant, user_id) -> dict[int, dict]:
    return {
        pk: store.get(pk) for pk in Session.objects.filter(tenant=tenant, user_id=user_id).values_list("pk", flat=True)
    }


def _fail_with_residue(monkeypatch):
    monkeypatch.setattr(erasure.execution.subject_data, "subject_erase", lambda **kw: {})


def _fail_with_a_database_error(monkeypatch):
    def refuse(*args, **kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(ErasedSubject.objects, "bulk_create", refuse)


@pytest.mark.parametrize(
    "failure", [_fail_with_residue, _fail_with_a_database_error], ids=["residue", "database error"]
)
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
    assert {pk: store.get(pk) for pk in before} == {pk: {} for pk in before}
    assert store.count_many(list(before)) == 0


# --- SQLite: the write-ahead log (defect 2) -------------------------------------------------------

WAL_SUBJECT = "walsubject-7f3a"


def _file_bytes(path) -> bytes:
    return path.read_bytes() if path.exists() else b""


@pytest.mark.servers  # a migrated SQLite file of its own, as deployed
def test_after_an_erasure_the_sqlite_wal_is_truncated_and_a_reader_holding_it_is_reported(sqlite_file, client):
    from agentstate.tenancy.services import tenant_get_or_create

    tenant = tenant_get_or_create(slug="acme")
    admin = get_user_model().objects.create_superuser("admin")
    subject_data_create(tenant=tenant, user_id=WAL_SUBJECT)
    subject_data_create(tenant=tenant, user_id="bystander", sessions=1)
    wal = sqlite_file.with_name(sqlite_file.name + "-wal")
    assert WAL_SUBJECT.encode() in _file_bytes(wal)

    # A reader in the middle of a read transaction: the log cannot be truncated under it.
    reader = sqlite3.connect(sqlite_file)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM userdata_app_userdatum").fetchone()[0] == 4
    request = verified_request(subjects=[(tenant, WAL_SUBJECT)], scope=Scope.EVERYTHING, actor=admin)
    receipt = erasure.erasure_execute(request=request, actor=admin)

    request.refresh_from_db()
    assert request.status == Status.EXECUTED
    assert request.storage_pending == erasure.WAL_PENDING  # said honestly: the bytes are still there
    assert WAL_SUBJECT.encode() in _file_bytes(wal)
    assert erasure.receipt_document(receipt=receipt)["storage_pending"] == erasure.WAL_PENDING
    client.force_login(admin)
    page = client.get(f"/admin/userdata_app/erasurerequest/{request.pk}/change/").content.decode()
    assert "write-ahead log" in page

    with pytest.raises(CommandError, match="Still pending"):  # the reader is still there
        call_command("erasure_storage_cleanup", "--timeout", "0")
    reader.rollback()
    reader.close()
    call_command("erasure_storage_cleanup", "--timeout", "5", stdout=StringIO())

    request.refresh_from_db()
    assert request.storage_pending == ""
    assert _file_bytes(wal) == b""  # clearing the note wrote to the log; it was truncated again
    for path in (wal, sqlite_file):
        content = _file_bytes(path)
        for marker in (
            WAL_SUBJECT,
            f"hello from {WAL_SUBJECT}",
            f"{WAL_SUBJECT}@example.com",
            f"task of {WAL_SUBJECT}",
        ):
            assert marker.encode() not in content, (path.name, marker)
    assert b"bystander@example.com" in _file_bytes(sqlite_file)


@pytest.mark.servers  # a migrated SQLite file of its own, as deployed
def test_erase_user_retries_the_wal_and_says_when_it_is_still_held(sqlite_file):
    from agentstate.tenancy.services import tenant_get_or_create

    tenant = tenant_get_or_create(slug="acme")
    subject_data_create(tenant=tenant, user_id=WAL_SUBJECT, sessions=1)
    reader = sqlite3.connect(sqlite_file)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM sessions_app_session").fetchone()
    out, err = StringIO(), StringIO()
    call_command(
        "erase_user", "--subject", f"acme:{WAL_SUBJECT}", "--storage-timeout", "0", "--yes", stdout=out, stderr=err
    )
    reader.close()

    assert json.loads(out.getvalue())["storage_pending"] == erasure.WAL_PENDING
    assert "erasure_storage_cleanup" in err.getvalue()


@pytest.mark.servers  # a migrated SQLite file of its own, as deployed
def test_without_a_reader_the_wal_is_empty_right_after_the_erasure(sqlite_file):
    from agentstate.tenancy.services import tenant_get_or_create

    tenant = tenant_get_or_create(slug="acme")
    subject_data_create(tenant=tenant, user_id=WAL_SUBJECT)
    request = verified_request(subjects=[(tenant, WAL_SUBJECT)], scope=Scope.USER_DATA)
    erasure.erasure_execute(request=request)

    request.refresh_from_db()
    assert request.storage_pending == ""
    assert WAL_SUBJECT.encode() not in _file_bytes(sqlite_file.with_name(sqlite_file.name + "-wal"))
    assert f"{WAL_SUBJECT}@example.com".encode() not in _file_bytes(sqlite_file)


# --- PostgreSQL: planner statistics (defect 5) ------------------------------------------------------

STATS_SUBJECT = "statsubject-4b1d"


@pytest.mark.django_db(transaction=True)
def test_postgresql_statistics_keep_no_erased_value(postgres_only, tenant):
    subject_data_create(tenant=tenant, user_id=STATS_SUBJECT, sessions=3, messages=40)
    subject_data_create(tenant=tenant, user_id="bystander", sessions=2, messages=5)
    Checkpoint.objects.filter(user_id="bystander").delete()  # a table the erasure leaves empty
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    before = pg_stats_text()
    assert STATS_SUBJECT in before and f"hello from {STATS_SUBJECT}" in before  # most common values

    erasure.erasure_execute(request=verified_request(subjects=[(tenant, STATS_SUBJECT)], scope=Scope.EVERYTHING))

    after = pg_stats_text()
    for marker in (STATS_SUBJECT, f"hello from {STATS_SUBJECT}", f"{STATS_SUBJECT}@example.com", STATS_SUBJECT.title()):
        assert marker not in after, marker
    assert "bystander" in after  # the statistics were refreshed, not dropped


# --- A crash between the commit and the clean-up (issue 23, defect 7) ------------------------------

CRASH_SUBJECT = "crashsubject-9d2e"

# Executes the request named by argv[1] and dies with SIGKILL the moment the erasure has committed:
# the on_commit callback registered first runs first, before any clean-up the erasure registered.
ERASE_THEN_DIE = """
import os, signal, sys
import django

django.setup()
from django.db import transaction
from userdata_app import erasure
from userdata_app.models import ErasureRequest

with transaction.atomic():
    transaction.on_commit(lambda: os.kill(os.getpid(), signal.SIGKILL))
    erasure.erasure_execute(request=ErasureRequest.objects.get(pk=int(sys.argv[1])))
"""


def _erase_in_a_process_killed_after_the_commit(request: ErasureRequest) -> None:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        url = f"sqlite:///{db['NAME']}"
    else:
        server = f"{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}"
        url = f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{server}/{db['NAME']}"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": url}
    died = subprocess.run(
        [sys.executable, "-c", ERASE_THEN_DIE, str(request.pk)], cwd=ROOT, env=env, capture_output=True, timeout=120
    )
    assert died.returncode == -signal.SIGKILL, died.stderr.decode()


@pytest.fixture
def copies_outside_the_tables(request):
    """The copies of rows the database keeps outside its live tables, as bytes: SQLite's database
    file and its WAL (the test runs on a file), or every value in PostgreSQL's ``pg_stats``."""
    if connection.vendor == "sqlite":
        path = request.getfixturevalue("sqlite_file")
        return lambda: _file_bytes(path) + _file_bytes(path.with_name(path.name + "-wal"))
    return lambda: pg_stats_text().encode()


@pytest.mark.servers  # a fresh process of the service, killed mid-erasure
@pytest.mark.django_db(transaction=True)
def test_a_crash_right_after_the_erasure_commits_leaves_its_clean_up_flagged_until_the_command_finishes_it(
    copies_outside_the_tables, client
):
    from agentstate.tenancy.services import tenant_get_or_create

    tenant = tenant_get_or_create(slug="acme")
    admin = get_user_model().objects.create_superuser("admin")
    subject_data_create(tenant=tenant, user_id=CRASH_SUBJECT, sessions=3, messages=40)
    subject_data_create(tenant=tenant, user_id="bystander", sessions=2, messages=5)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # as autovacuum would: the statistics sample the subject's values
    else:
        assert wal_truncate()  # the subject's rows are in the database file itself, not only in the WAL
    markers = [CRASH_SUBJECT.encode(), f"hello from {CRASH_SUBJECT}".encode()]
    assert all(marker in copies_outside_the_tables() for marker in markers)
    store = working_state.get_store()
    subject_sessions, bystander_sessions = (
        list(Session.objects.filter(user_id=user_id).values_list("pk", flat=True))
        for user_id in (CRASH_SUBJECT, "bystander")
    )
    request = verified_request(subjects=[(tenant, CRASH_SUBJECT)], scope=Scope.EVERYTHING, actor=admin)

    _erase_in_a_process_killed_after_the_commit(request)

    request.refresh_from_db()
    owed = erasure.STORAGE_CLEANUP_OWED[connection.vendor]
    if store.outlives_its_session:  # Redis: the erased sessions' working state was never cleared
        owed += " " + erasure.WORKING_STATE_OWED
        assert store.count_many(subject_sessions) == 3
    assert (request.status, request.storage_pending) == (Status.EXECUTED, owed)
    assert erasure.receipt_document(receipt=request.receipt)["storage_pending"] == owed
    client.force_login(admin)
    page = f"/admin/userdata_app/erasurerequest/{request.pk}/"
    assert escape(owed) in client.get(f"{page}change/").content.decode()
    assert json.loads(client.get(f"{page}receipt/").content)["storage_pending"] == owed
    assert all(marker in copies_outside_the_tables() for marker in markers)  # the flag is no false alarm
    if connection.vendor == "sqlite":  # in the database file itself, until the log is checkpointed
        assert all(marker in _file_bytes(Path(connection.settings_dict["NAME"])) for marker in markers)

    call_command("erasure_storage_cleanup", "--timeout", "5", stdout=StringIO())

    request.refresh_from_db()
    assert request.storage_pending == ""
    assert erasure.receipt_document(receipt=request.receipt)["storage_pending"] == ""
    left = copies_outside_the_tables()
    assert [marker for marker in markers if marker in left] == []
    assert b"bystander" in left
    assert (store.count_many(subject_sessions), store.count_many(bystander_sessions)) == (0, 2)


# --- Redis down or refusing (issue 25) -------------------------------------------------------------

REDIS_SUBJECT = "redissubject-5c8a"


@pytest.fixture
def own_redis(settings):
    """A Redis server of this test's own (its writes are refused on demand), holding the working state."""
    server, port, client = redis_server_started()
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    settings.WORKING_STATE_BACKEND = "redis"
    yield client
    server.terminate()
    server.wait(timeout=10)


@pytest.mark.servers  # a Redis server of its own
def test_redis_refusing_the_clear_after_the_commit_leaves_the_erasure_done_and_says_what_is_left(
    own_redis, tenant, client, django_capture_on_commit_callbacks
):
    """The erased sessions' working state is counted, then Redis refuses every write (the clear
    after the commit): the admin's answer is the executed request, not a 500, and its note (and
    receipt) say Redis may still hold it, until erasure_storage_cleanup sweeps it."""
    admin = get_user_model().objects.create_superuser("admin")
    subject_data_create(tenant=tenant, user_id=REDIS_SUBJECT)
    sessions = list(Session.objects.filter(user_id=REDIS_SUBJECT).values_list("pk", flat=True))
    store = working_state.get_store()
    assert store.count_many(sessions) == 2
    request = verified_request(subjects=[(tenant, REDIS_SUBJECT)], scope=Scope.EVERYTHING, actor=admin)
    own_redis.config_set("min-replicas-to-write", 1)  # reads answer, writes are refused

    client.force_login(admin)
    with django_capture_on_commit_callbacks(execute=True):
        done = client.post(
            "/admin/userdata_app/erasurerequest/",
            {"action": "execute_erasure", "_selected_action": [request.pk], "post": "yes"},
        )
    assert done.status_code == 302
    request.refresh_from_db()
    assert request.status == Status.EXECUTED and not Session.objects.filter(user_id=REDIS_SUBJECT).exists()
    assert erasure.WORKING_STATE_OWED in request.storage_pending
    assert escape(erasure.WORKING_STATE_OWED) in client.get(done["Location"]).content.decode()
    assert store.count_many(sessions) == 2  # the note is no false alarm

    own_redis.config_set("min-replicas-to-write", 0)
    call_command("erasure_storage_cleanup", "--timeout", "5", stdout=StringIO())
    request.refresh_from_db()
    assert request.storage_pending == "" and store.count_many(sessions) == 0


@pytest.mark.servers  # a Redis server of its own, then stopped
def test_with_redis_down_an_erasure_erases_nothing_and_the_clean_up_command_says_so(own_redis, tenant):
    subject_data_create(tenant=tenant, user_id=REDIS_SUBJECT)
    request = verified_request(subjects=[(tenant, REDIS_SUBJECT)], scope=Scope.EVERYTHING)
    own_redis.shutdown(nosave=True)

    with pytest.raises(erasure.ErasureFailed, match="did not answer; nothing was erased"):
        erasure.erasure_execute(request=request)
    request.refresh_from_db()
    assert request.status == Status.FAILED and "Redis" in request.failure
    assert Session.objects.filter(user_id=REDIS_SUBJECT).count() == 2

    with pytest.raises(CommandError, match=re.escape(erasure.WORKING_STATE_UNREACHABLE)):
        call_command("erasure_storage_cleanup", "--timeout", "0")
