"""Two app servers on one database behind HAProxy: the concurrency guarantees hold with the
writers spread over both, and a revoked key stops working on every server within the delay
docs/OPERATIONS.md gives (AGENTSTATE_API_KEY_CACHE_SECONDS)."""

import json
import time
from collections import Counter

from django.conf import settings

from sessions_app import services
from tests.hardening.test_concurrency_api import WRITES_BY_SUBJECT
from tests.multinode.servers import APPS, SESSIONS, client, in_threads, key_new, needs_servers, tenant_new

pytestmark = needs_servers
S = "/api/v1/users/u1/sessions/s1/"
BOTH = {"app1", "app2"}


def test_appends_through_both_servers_are_gap_free_and_each_batch_contiguous():
    tenant = tenant_new()
    key = key_new(tenant)
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    threads, batches, size = 8, 5, 3

    def append(t: int):
        seqs, servers = [], set()
        with client(key) as api:
            for b in range(batches):
                answer = api.post(
                    S + "messages/", json={"messages": [{"content": f"{t}-{b}-{i}"} for i in range(size)]}
                )
                assert answer.status_code == 201, answer.text
                seqs.append([m["seq"] for m in answer.json()["messages"]])
                servers.add(answer.headers["X-Served-By"])
        return seqs, servers

    results = in_threads(threads, append)
    batches_seen = [batch for seqs, _ in results for batch in seqs]
    assert sorted(seq for batch in batches_seen for seq in batch) == list(range(1, threads * batches * size + 1))
    assert all(batch == list(range(batch[0], batch[0] + size)) for batch in batches_seen)
    assert set().union(*(servers for _, servers in results)) == BOTH


def test_concurrent_creates_through_both_servers_let_exactly_one_win():
    key = key_new(tenant_new())

    def create(t: int):
        with client(key) as api:
            answer = api.post(SESSIONS, json={"user_id": "u1", "session_id": "s1", "agent_id": f"a{t}"})
        return answer.status_code, answer.headers["X-Served-By"]

    results = in_threads(10, create)
    assert Counter(status for status, _ in results) == {201: 1, 409: 9}
    assert {server for _, server in results} == BOTH


def test_concurrent_if_match_writes_through_both_servers_let_exactly_one_win():
    tenant = tenant_new()
    key = key_new(tenant)
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    with client(key) as api:
        etag = api.get(S).headers["ETag"]

    def patch(t: int):
        with client(key) as api:
            answer = api.patch(S, json={"metadata": {"writer": str(t)}}, headers={"If-Match": etag})
        return answer.status_code, answer.headers["X-Served-By"]

    results = in_threads(10, patch)
    assert Counter(status for status, _ in results) == {200: 1, 412: 9}
    assert {server for _, server in results} == BOTH
    with client(key) as api:
        after = api.get(S)
    assert after.headers["ETag"] == f'"{int(etag.strip(chr(34))) + 1}"'
    winner = [status for status, _ in results].index(200)
    assert after.json()["metadata"] == {"writer": str(winner)}


def test_erasure_racing_writes_through_both_servers_leaves_nothing_in_scope():
    from tests.userdata_app.erasure_factories import subject_data_create, verified_request
    from userdata_app.erasure import erasure_execute, subjects_preview

    tenant = tenant_new()
    key = key_new(tenant)
    subject_data_create(tenant=tenant, user_id="u1", sessions=2, messages=3)
    subject_data_create(tenant=tenant, user_id="bystander", sessions=1, messages=2)
    request = verified_request(subjects=[(tenant, "u1")], scope="everything")
    writers, rounds = 6, 15

    def work(t: int):
        if t == writers:  # the last thread erases (in this process, on the primary) while the others write
            time.sleep(0.05)
            return erasure_execute(request=request).counts
        statuses = []
        with client(key) as api:
            for n in range(rounds):
                method, path, body = WRITES_BY_SUBJECT[(t + n) % len(WRITES_BY_SUBJECT)]
                fill = f"{t}-{n}"
                answer = api.request(
                    method.upper(), path.replace("{n}", fill), json=json.loads(json.dumps(body).replace("{n}", fill))
                )
                code = answer.json().get("error", {}).get("code") if answer.content else None
                statuses.append((answer.status_code, code, answer.headers["X-Served-By"]))
        return statuses

    results = in_threads(writers + 1, work)
    answers = [answer for per_thread in results[:writers] for answer in per_thread]
    assert {code for code, _, _ in answers} <= {200, 201, 404, 409}, Counter(answers)
    assert all(
        reason in ("subject_erased", "session_ended", "session_exists") for code, reason, _ in answers if code == 409
    )
    assert any(reason == "subject_erased" for _, reason, _ in answers)  # the race was real
    assert {server for _, _, server in answers} == BOTH
    left = subjects_preview(subjects=[(tenant, "u1")], scope="everything")
    assert not any(left.values()), f"data of the erased subject survived: {left}"
    assert subjects_preview(subjects=[(tenant, "bystander")], scope="everything")["sessions"] == 1


def test_a_revoked_key_stops_working_on_every_server_within_the_documented_delay():
    from agentstate.tenancy.models import APIKey
    from agentstate.tenancy.services import api_key_revoke

    key = key_new(tenant_new())
    servers = [client(key, base) for base in APPS]
    for api in servers:  # every worker of both servers has verified (and cached) the key
        assert all(api.get(SESSIONS).status_code == 200 for _ in range(8))
    api_key_revoke(api_key=APIKey.objects.get_from_key(key))
    revoked_at = time.monotonic()
    delay = settings.API_KEY_CACHE_SECONDS
    last_success = revoked_at
    while time.monotonic() < revoked_at + delay + 1.5:
        for api in servers:
            if api.get(SESSIONS).status_code == 200:
                last_success = time.monotonic()
        time.sleep(0.05)
    assert last_success - revoked_at <= delay + 0.5, "a server kept accepting a revoked key past the delay"
    for api in servers:
        assert all(api.get(SESSIONS).status_code == 401 for _ in range(8))
        api.close()
