"""An app server dies (kill -9 of its master and workers) while requests stream through the proxy:
HAProxy sends to the other server what never reached the dead one; only requests in flight on the
dead server are lost (a 502, or a kept-alive connection closed without an answer), two per client at
most, and a lost write's retry with the same client_id stores it once (docs/SCALING.md, step 6).
Started again, the server serves again."""

import os
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from sessions_app import services
from sessions_app.models import Message
from tests.multinode.servers import APPS, SESSIONS, client, in_threads, key_new, needs_servers, tenant_new

pytestmark = needs_servers
S = "/api/v1/users/u1/sessions/s1/"
WORK = Path(os.environ.get("MULTINODE_WORK", "."))
ROOT = Path(__file__).resolve().parents[2]
LOST = "lost"  # a 502, or the connection closed without an answer


def server_processes(n: int) -> list[int]:
    """App server n's master (its pid file) and its workers (the processes whose parent it is)."""
    master = int((WORK / f"app{n}.pid").read_text())
    return [master, *(int(stat.parent.name) for stat in Path("/proc").glob("[0-9]*/stat") if _parent(stat) == master)]


def _parent(stat: Path) -> int | None:
    try:
        return int(stat.read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None  # the process ended while being read


def server_start(n: int) -> None:
    """Start app server n again and wait until it answers. A killed master may linger unreaped (its
    parent is gone) and keep its pid alive, so its pid file goes first: gunicorn would refuse it."""
    (WORK / f"app{n}.pid").unlink(missing_ok=True)
    subprocess.run(["bash", ROOT / ".ci" / "app_server", str(n)], check=True, start_new_session=True)  # noqa: S607 (CI's own script)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{APPS[n - 1]}/healthz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"app server {n} did not start again: see {WORK}/app{n}.log"
        time.sleep(0.2)


def append(api: httpx.Client, client_id: str) -> httpx.Response:
    return api.post(S + "messages/", json={"messages": [{"client_id": client_id, "content": "x"}]})


def test_a_killed_app_server_loses_only_writes_in_flight_on_it_and_serves_again_once_restarted():
    tenant = tenant_new()
    key = key_new(tenant)
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    killed, stop = threading.Event(), threading.Event()
    writers = 3

    def stream(t: int) -> list[tuple[str, int | str, str | None, str | None]]:
        """Thread 0 kills app server 1 a second in; the others write (1-3) or list (4-6) until the
        proxy has had time to take it out."""
        if t == 0:
            time.sleep(1)
            for pid in server_processes(1):
                os.kill(pid, signal.SIGKILL)
            killed.set()
            time.sleep(4)  # past HAProxy's three failed checks, one a second
            stop.set()
            return []
        answers = []
        with client(key) as api:
            n = 0
            while not stop.is_set():
                client_id = f"{t}-{n}" if t <= writers else None
                try:
                    answer = append(api, client_id) if client_id else api.get(SESSIONS, params={"user_id": "u1"})
                except httpx.RemoteProtocolError:  # HAProxy closed a kept-alive connection: no answer
                    answers.append(("POST" if client_id else "GET", LOST, None, client_id))
                else:
                    status = LOST if answer.status_code == 502 else answer.status_code
                    answers.append((answer.request.method, status, answer.headers.get("X-Served-By"), client_id))
                n += 1
        return answers

    try:
        per_thread = in_threads(1 + 2 * writers, stream)
        answers_by_client = [(t, answer) for t, answers in enumerate(per_thread) for answer in answers]
        answers = [answer for _, answer in answers_by_client]
        assert killed.is_set()
        outcomes = Counter((method, status) for method, status, _, _ in answers)
        assert {status for method, status in outcomes if method == "GET"} <= {200, LOST}, outcomes
        assert {status for method, status in outcomes if method == "POST"} <= {201, LOST}, outcomes
        # Only what was sent to the dying server: one request per client, once in a while two.
        lost_per_client = Counter(client for client, (_, status, _, _) in answers_by_client if status == LOST)
        assert max(lost_per_client.values(), default=0) <= 2, outcomes
        assert {server for _, status, server, _ in answers if status != LOST} == {"app1", "app2"}
        with client(key) as api:  # each lost write retried by its client, with its client_id
            for _, _, _, client_id in (answer for answer in answers if answer[1] == LOST):
                assert append(api, client_id).status_code in (200, 201)
        sent = {client_id for _, _, _, client_id in answers if client_id}
        stored = list(Message.objects.filter(session__tenant=tenant).values_list("client_id", "seq"))
        assert sorted(client_id for client_id, _ in stored) == sorted(sent)  # each once
        assert sorted(seq for _, seq in stored) == list(range(1, len(sent) + 1))
    finally:  # whatever happened above, the next tests get both servers back
        server_start(1)
        deadline = time.monotonic() + 30  # HAProxy takes it back after two good checks
        with client(key) as api:
            while api.get(SESSIONS, params={"user_id": "u1"}).headers["X-Served-By"] != "app1":
                assert time.monotonic() < deadline, "the restarted server got no request through the proxy"
                time.sleep(0.2)
            assert [api.get(SESSIONS, params={"user_id": "u1"}).status_code for _ in range(6)] == [200] * 6
