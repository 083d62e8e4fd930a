"""Real threads through the real API on PostgreSQL: each thread its own client and connection,
released together. Counts are asserted, not just the absence of errors."""

import threading
import time
from collections import Counter

import pytest
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import Message, Round, Session
from tests.hardening.writes import WRITES_BY_SUBJECT
from tests.threads import in_threads

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]
S = "/api/v1/users/u1/sessions/s1/"


def client_for(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def no_errors(errors):
    assert errors == [], errors


def test_concurrent_auto_round_saves_get_every_id_once(postgres_only, agent_key):
    threads, saves = 8, 10

    def save(t: int) -> list[tuple[int, int]]:
        api = client_for(agent_key)
        answers = [api.post(S + "rounds/", {"state": {"t": t, "n": n}}, format="json") for n in range(saves)]
        return [(a.status_code, a.json()["round_id"]) for a in answers]

    results, errors = in_threads(threads, save)
    no_errors(errors)
    answers = [answer for per_thread in results for answer in per_thread]
    assert Counter(status for status, _ in answers) == {201: threads * saves}
    assert sorted(round_id for _, round_id in answers) == list(range(1, threads * saves + 1))
    assert Session.objects.get().last_round_id == threads * saves  # the session, created once by the race
    states = dict(Round.objects.values_list("round_id", "state"))
    for t, per_thread in enumerate(results):  # no save overwrote another
        assert [states[round_id] for _, round_id in per_thread] == [{"t": t, "n": n} for n in range(saves)]


def test_concurrent_appends_are_gap_free_and_each_batch_contiguous(postgres_only, tenant, agent_key):
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    threads, batches, size = 8, 5, 3

    def append(t: int) -> list[list[int]]:
        api = client_for(agent_key)
        seqs = []
        for b in range(batches):
            body = {"messages": [{"content": f"{t}-{b}-{i}"} for i in range(size)]}
            answer = api.post(S + "messages/", body, format="json")
            assert answer.status_code == 201, answer.content
            seqs.append([m["seq"] for m in answer.json()["messages"]])
        return seqs

    results, errors = in_threads(threads, append)
    no_errors(errors)
    total = threads * batches * size
    assert sorted(seq for per_thread in results for batch in per_thread for seq in batch) == list(range(1, total + 1))
    for per_thread in results:
        for batch in per_thread:
            assert batch == list(range(batch[0], batch[0] + size))  # a batch is never interleaved
    stored = dict(Message.objects.values_list("seq", "content"))
    for t, per_thread in enumerate(results):
        for b, batch in enumerate(per_thread):
            assert [stored[seq] for seq in batch] == [f"{t}-{b}-{i}" for i in range(size)]
    assert client_for(agent_key).get(S).json()["message_count"] == total


def test_concurrent_retries_of_one_client_id_store_it_once(postgres_only, tenant, agent_key):
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")

    def retry(t: int) -> tuple[int, int]:
        answer = client_for(agent_key).post(S + "messages/", {"client_id": "m-1", "content": "once"}, format="json")
        return answer.status_code, answer.json()["messages"][0]["seq"]

    results, errors = in_threads(10, retry)
    no_errors(errors)
    assert Counter(status for status, _ in results) == {201: 1, 200: 9}
    assert {seq for _, seq in results} == {1}
    assert Message.objects.count() == 1


def test_concurrent_creates_of_one_session_id_let_exactly_one_win(postgres_only, agent_key):
    def create(t: int) -> tuple[int, str]:
        answer = client_for(agent_key).post(
            "/api/v1/sessions/", {"user_id": "u1", "session_id": "s1", "agent_id": f"a{t}"}, format="json"
        )
        return answer.status_code, answer.json().get("error", {}).get("code", "")

    results, errors = in_threads(10, create)
    no_errors(errors)
    assert Counter(results) == {(201, ""): 1, (409, "session_exists"): 9}
    assert Session.objects.count() == 1


@pytest.mark.parametrize(
    "path, body",
    [
        (S, {"metadata": {"writer": "{t}"}}),
        (S + "rounds/1/", {"state": {"writer": "{t}"}}),
    ],
    ids=["session PATCH", "round PUT"],
)
def test_concurrent_if_match_writes_let_exactly_one_win(postgres_only, tenant, agent_key, path, body):
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.round_save(tenant=tenant, user_id="u1", session_id="s1", state={}, round_id=1)
    etag = client_for(agent_key).get(path).headers["ETag"]
    method = "patch" if path == S else "put"

    def write(t: int) -> int:
        own = {key: {k: v.replace("{t}", str(t)) for k, v in value.items()} for key, value in body.items()}
        return getattr(client_for(agent_key), method)(path, own, format="json", HTTP_IF_MATCH=etag).status_code

    results, errors = in_threads(10, write)
    no_errors(errors)
    assert Counter(results) == {200: 1, 412: 9}
    after = client_for(agent_key).get(path)
    assert after.headers["ETag"] == f'"{int(etag.strip(chr(34))) + 1}"'  # exactly one write happened
    winner = results.index(200)
    assert (after.json().get("metadata") or after.json().get("state")) == {"writer": str(winner)}


def test_erasure_racing_writes_for_the_same_user_leaves_nothing_in_scope(postgres_only, tenant, agent_key, settings):
    from tests.userdata_app.erasure_factories import subject_data_create, verified_request
    from userdata_app.erasure import erasure_execute, subjects_preview

    subject_data_create(tenant=tenant, user_id="u1", sessions=2, messages=3)
    subject_data_create(tenant=tenant, user_id="bystander", sessions=1, messages=2)
    request = verified_request(subjects=[(tenant, "u1")], scope="everything")
    writers, rounds = 6, 15

    def work(t: int):
        if t == writers:  # the last thread erases while the others write
            return erasure_execute(request=request).counts
        api, statuses = client_for(agent_key), []
        for n in range(rounds):
            method, path, body = WRITES_BY_SUBJECT[(t + n) % len(WRITES_BY_SUBJECT)]
            fill = f"{t}-{n}"
            body = __import__("json").loads(__import__("json").dumps(body).replace("{n}", fill))
            answer = getattr(api, method)(path.replace("{n}", fill), body, format="json")
            statuses.append(
                (answer.status_code, answer.json().get("error", {}).get("code") if answer.content else None)
            )
        return statuses

    results, errors = in_threads(writers + 1, work)
    no_errors(errors)
    statuses = Counter(status for per_thread in results[:writers] for status in per_thread)
    assert all(code < 500 for code, _ in statuses), statuses
    assert {code for code, _ in statuses} <= {200, 201, 404, 409}, statuses
    assert all(
        reason in ("subject_erased", "session_ended", "session_exists") for code, reason in statuses if code == 409
    )
    assert sum(n for (code, reason), n in statuses.items() if reason == "subject_erased") > 0  # the race was real
    left = subjects_preview(subjects=[(tenant, "u1")], scope="everything")
    assert not any(left.values()), f"data of the erased subject survived: {left}"
    assert Session.objects.filter(user_id="bystander").count() == 1  # nobody else was touched


def test_concurrent_pops_each_get_a_different_message_or_none(postgres_only, tenant, agent_key):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.message_append(session=session, messages=[{"content": f"m{i}"} for i in range(1, 21)])

    def pop(t: int) -> list:
        api = client_for(agent_key)
        answers = [api.post(S + "messages/pop/", {"idempotency_key": f"t{t}-{n}"}, format="json") for n in range(3)]
        assert all(a.status_code == 200 for a in answers), [a.content for a in answers]
        return [None if a.json()["message"] is None else a.json()["message"]["seq"] for a in answers]

    results, errors = in_threads(10, pop)
    no_errors(errors)
    popped = [seq for per_thread in results for seq in per_thread if seq is not None]
    assert sorted(popped) == list(range(1, 21))  # every message once, none twice
    assert sum(seq is None for per_thread in results for seq in per_thread) == 10
    for per_thread in results:  # each thread saw the history shrink from the end
        seqs = [seq for seq in per_thread if seq is not None]
        assert seqs == sorted(seqs, reverse=True)
    stored = Session.objects.get(pk=session.pk)
    assert (Message.objects.count(), stored.message_count, stored.last_seq, stored.history_generation) == (0, 0, 20, 20)


def test_a_rewind_racing_appends_never_removes_an_append_its_caller_did_not_see(postgres_only, tenant, agent_key):
    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    services.message_append(session=session, messages=[{"content": "seed"}] * 5)
    appenders, appends, rewinders = 6, 15, 2
    # Every five appends the appenders pause together for a moment: a rewind fits in the lull, and
    # the appends that follow race the ones still in flight (without it, six appenders can leave no
    # rewind a chance on a loaded machine).
    lull = threading.Barrier(appenders, action=lambda: time.sleep(0.1))
    finished: list[int] = []  # the appenders done

    def work(t: int) -> list:
        api = client_for(agent_key)
        done = []
        if t < appenders:
            try:
                for n in range(appends):
                    if n % 5 == 4:
                        lull.wait(timeout=30)
                    answer = api.post(S + "messages/", {"content": f"{t}-{n}"}, format="json")
                    assert answer.status_code == 201, answer.content
                    done.append(("append", answer.json()["messages"][0]["seq"]))
            finally:
                finished.append(t)
            return done
        while len(finished) < appenders:  # rewinds race the appends for as long as they go on
            recent = api.get(S + "messages/?recent=1").json()["results"]
            seen = recent[0]["seq"] if recent else 0
            body = {"after_seq": max(0, seen - 3), "expected_last_seq": seen}
            answer = api.post(S + "messages/rewind/", body, format="json")
            assert answer.status_code in (200, 412), answer.content
            if answer.status_code == 200:
                done.append(("rewind", body["after_seq"], seen))
        return done

    results, errors = in_threads(appenders + rewinders, work)
    no_errors(errors)
    events = [event for per_thread in results for event in per_thread]
    appended = [event[1] for event in events if event[0] == "append"]
    rewound = [event[1:] for event in events if event[0] == "rewind"]
    assert rewound, "no rewind went through: the race was not exercised"
    stored = set(Message.objects.values_list("seq", flat=True))
    assert len(set(appended)) == len(appended)  # no seq given twice
    for seq in set(appended) - stored:  # a removed append was seen by the rewind that removed it
        assert any(after < seq <= seen for after, seen in rewound), seq
    after = Session.objects.get(pk=session.pk)
    assert after.message_count == len(stored) and after.last_seq == 5 + appenders * appends
