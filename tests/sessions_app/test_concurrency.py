"""Real threads against PostgreSQL: counters stay gap-free and nothing written is lost."""

import threading
import time
from collections import Counter

import pytest
from django.db import connection

from agentstate.exceptions import NotFound, SessionAlreadyExists, SessionEnded
from sessions_app import selectors, services, working_state
from sessions_app.models import Message, Round, Session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def _in_threads(count: int, work) -> tuple[list, list[BaseException]]:
    """Run ``work(i)`` in ``count`` threads released together; returns results and errors."""
    barrier = threading.Barrier(count)
    results: list = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    return results, errors


def test_concurrent_auto_round_saves_get_distinct_gap_free_ids(postgres_only, tenant):
    threads, saves = 20, 50

    def save(t: int) -> list[int]:
        return [services.round_save(tenant=tenant, user_id="u1", state={"t": t, "n": n}).round_id for n in range(saves)]

    results, errors = _in_threads(threads, save)

    assert errors == []
    ids = [round_id for per_thread in results for round_id in per_thread]
    assert sorted(ids) == list(range(1, threads * saves + 1))
    assert all(per_thread == sorted(per_thread) for per_thread in results)
    session = Session.objects.get()  # the "default" session, created once by the racing first saves
    assert (session.session_id, session.last_round_id) == ("default", 1000)
    assert Round.objects.count() == 1000
    by_id = dict(Round.objects.values_list("round_id", "state"))
    for t, per_thread in enumerate(results):  # no save overwrote another
        assert [by_id[round_id] for round_id in per_thread] == [{"t": t, "n": n} for n in range(saves)]


def test_concurrent_batch_appends_are_gap_free_and_lose_nothing(postgres_only, tenant):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    threads, batches, size = 10, 20, 5

    def append(t: int) -> list[list[int]]:
        seqs = []
        for b in range(batches):
            messages = [{"role": "user", "content": f"{t}-{b}-{k}"} for k in range(size)]
            if t % 2 == 0:  # half the writers send client ids, which takes the retry-lookup path
                for k, message in enumerate(messages):
                    message["client_id"] = f"{t}-{b}-{k}"
            seqs.append([m.seq for m in services.message_append(session=session, messages=messages).messages])
        if t % 2 == 0:  # a retry of a whole batch adds nothing
            retried = [{"role": "user", "content": "again", "client_id": f"{t}-0-{k}"} for k in range(size)]
            assert not services.message_append(session=session, messages=retried).created
        return seqs

    results, errors = _in_threads(threads, append)

    assert errors == []
    total = threads * batches * size
    assert list(Message.objects.filter(session=session).order_by("seq").values_list("seq", flat=True)) == list(
        range(1, total + 1)
    )
    assert Session.objects.get(pk=session.pk).last_seq == total
    contents = Counter(Message.objects.filter(session=session).values_list("content", flat=True))
    assert contents == Counter(f"{t}-{b}-{k}" for t in range(threads) for b in range(batches) for k in range(size))
    for per_thread in results:  # each batch got consecutive numbers
        for seqs in per_thread:
            assert seqs == list(range(seqs[0], seqs[0] + size))


def test_appends_racing_an_end_either_land_whole_or_are_refused(postgres_only, tenant):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")

    def work(t: int) -> int:
        if t == 0:  # end mid-stream, once some appends have landed
            for _ in range(5000):
                if Session.objects.get(pk=session.pk).last_seq >= 30:
                    break
                time.sleep(0.001)
            services.session_end(session=session)
            return 0
        stored = 0
        for b in range(10):
            try:
                services.message_append(session=session, messages=[{"role": "user", "content": f"{t}-{b}"}] * 3)
                stored += 3
            except SessionEnded:
                pass
        return stored

    results, errors = _in_threads(8, work)

    assert errors == []
    ended = Session.objects.get(pk=session.pk)
    assert ended.ended_at is not None
    assert Message.objects.filter(session=session).count() == ended.last_seq == sum(results)
    assert not Message.objects.filter(session=session, created_at__gt=ended.ended_at).exists()


@pytest.mark.parametrize("backend", ["database", "redis"])
def test_concurrent_first_patches_of_different_keys_all_land(postgres_only, tenant, settings, backend):
    if backend == "redis" and not settings.REDIS_URL:
        pytest.skip("the Redis store needs REDIS_URL")
    settings.WORKING_STATE_BACKEND = backend
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    working_state.get_store().clear(session.pk)

    _, errors = _in_threads(20, lambda t: services.working_state_patch(session=session, changes={f"k{t}": t}))

    assert errors == []
    assert selectors.working_state_get(session=session) == {f"k{t}": t for t in range(20)}


def test_the_database_store_merges_concurrent_first_writes_on_its_own(postgres_only, tenant, settings):
    """Without the services' session lock, the store's own row lock still loses no key."""
    settings.WORKING_STATE_BACKEND = "database"
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    store = working_state.get_store()

    _, errors = _in_threads(20, lambda t: store.patch(session.pk, {f"k{t}": t}))

    assert errors == []
    assert store.get(session.pk) == {f"k{t}": t for t in range(20)}


def test_concurrent_creates_of_one_session_id_let_exactly_one_win(postgres_only, tenant):
    def create(t: int) -> str:
        try:
            services.session_create(tenant=tenant, user_id="u1", session_id="same", metadata={"winner": t})
            return "created"
        except SessionAlreadyExists:
            return "exists"

    results, errors = _in_threads(20, create)

    assert errors == []
    assert Counter(results) == {"created": 1, "exists": 19}
    assert Session.objects.get().metadata == {"winner": results.index("created")}


@pytest.mark.parametrize("finish", ["delete", "end"])
def test_working_state_written_while_sessions_finish_does_not_outlive_them(postgres_only, tenant, settings, finish):
    """A patch racing a delete or an end either lands before it (and goes with it) or is refused."""
    if not settings.REDIS_URL:
        pytest.skip("the Redis store needs REDIS_URL (the database store cascades on its own)")
    settings.WORKING_STATE_BACKEND = "redis"
    sessions = [services.session_create(tenant=tenant, user_id="u1", session_id=f"s{n}") for n in range(40)]
    done = threading.Event()

    def work(t: int) -> None:
        if t == 0:
            for session in sessions:
                getattr(services, f"session_{finish}")(session=session)
            done.set()
            return
        while not done.is_set():
            for session in sessions:
                try:
                    services.working_state_patch(session=session, changes={f"k{t}": t})
                except (NotFound, SessionEnded):
                    pass

    _, errors = _in_threads(6, work)

    assert errors == []
    assert not Session.objects.filter(ended_at__isnull=True).exists()
    assert working_state.get_store().count_many([s.pk for s in sessions]) == 0
