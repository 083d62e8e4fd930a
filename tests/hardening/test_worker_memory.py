"""No read makes a gunicorn worker hold much more memory than the bytes it answers with, and a
worker that grew past ``GUNICORN_MAX_WORKER_MEMORY_MB`` is replaced (docs/OPERATIONS.md, "Memory").

A real gunicorn with one worker, the production settings and gunicorn.conf.py, on a temporary
SQLite database: 64 messages near the body limit (320 MiB, more than the bound; one appended
through the API, the rest written in one statement), framework state of 3-4 MiB records written
through the service layer, then every read path is read while the worker's resident memory is
watched (its peak, ``VmHWM``, reset before each read).
"""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.hardening.test_deploy import (
    HOST,
    HTTPS,
    ROOT,
    collected_static,  # noqa: F401 (a fixture, the same static files)
    gunicorn,
    manage,
    production_env,
)

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc"),
    pytest.mark.servers,
]

MiB = 2**20
GROWTH_BOUND_MIB = 256  # docs/OPERATIONS.md: what one read may add to a worker's memory
BODY_LIMIT = 5 * MiB  # AGENTSTATE_MAX_BODY_BYTES' default
LARGE = 32  # ADK events, LangGraph checkpoints, user data values of 3-4 MiB: each kind past the bound read whole
MESSAGES = 64  # of 5 MiB: 320 MiB, more than the bound (an unbounded page of them grows a worker by ~1 GiB)

SETUP = (
    """
import base64, json, os
from django.contrib.auth import get_user_model
from agentstate.tenancy.services import api_key_create, tenant_get_or_create
from agentstate_site.bulk_data import history_fill
from backends.adk.process import services as adk
from backends.langgraph.process import services as langgraph
from sessions_app.services.sessions import session_create
from userdata_app import access_requests, services as userdata

tenant = tenant_get_or_create(slug="acme")
get_user_model().objects.create_superuser("root", "root@example.com", "pw-for-tests-only")
session = session_create(tenant=tenant, user_id="alice", session_id="big")
# Near the body limit, as the test's own append through the API; one statement.
history_fill(session=session, messages=MESSAGES - 1, content="m" * (BODY_LIMIT - 200))
adk.adk_session_create(tenant=tenant, app_name="app", user_id="alice", session_id="adk", state={})
text = "e" * (4 * 2**20)
blob = base64.b64encode(os.urandom(3 * 2**20)).decode()
for i in range(LARGE):
    adk.adk_event_append(
        tenant=tenant, app_name="app", user_id="alice", session_id="adk",
        event={"id": f"e{i}", "author": "agent", "timestamp": 1_700_000_000 + i,
               "content": {"role": "model", "parts": [{"text": text}]}},
    )
    langgraph.checkpoint_put(
        tenant=tenant, thread_id="graph", user_id="alice", default_user_id="alice", checkpoint_ns="",
        checkpoint_id=f"c{i:04}", parent_checkpoint_id=None, checkpoint={"type": "bytes", "data": blob},
        metadata={"step": i}, channel_versions={},
    )
    userdata.user_datum_set(tenant=tenant, user_id="alice", key=f"k{i:03}", value=text)
access = access_requests.access_request_create(subjects=[(tenant, "alice")])
access_requests.access_request_verify(request=access, identity_check="in person")
print(json.dumps({"agent": api_key_create(tenant=tenant, name="agent")[1],
                  "compliance": api_key_create(tenant=tenant, name="officer", scope="compliance")[1],
                  "access_request": access.pk}))
""".replace("LARGE", str(LARGE))
    .replace("MESSAGES", str(MESSAGES))
    .replace("BODY_LIMIT", str(BODY_LIMIT))
)


def worker_of(master: int) -> int:
    (worker,) = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return int(worker)


def memory_mib(pid: int, field: str) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", status, re.M).group(1)) / 1024


def growth_mib(pid: int, read) -> float:
    """How far the worker's resident memory rose above where it was while ``read`` ran."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets the peak (VmHWM) to the current size
    before = memory_mib(pid, "VmRSS")
    read()
    return memory_mib(pid, "VmHWM") - before


def drained(response: httpx.Response) -> int:
    """Reads a (streamed) answer to its end; its size in bytes."""
    assert response.status_code == 200, response.read()[:300]
    return sum(len(chunk) for chunk in response.iter_bytes())


class Staff:
    """A logged-in superuser on the production settings: HTTPS behind the proxy, secure cookies
    (sent by hand: the client talks plain HTTP to gunicorn)."""

    def __init__(self, http: httpx.Client):
        self.http, self.cookies = http, {}
        login = self.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        answer = self.request(
            "POST",
            "/admin/login/?next=/admin/",
            data={"username": "root", "password": "pw-for-tests-only", "csrfmiddlewaretoken": token},
            headers={"Referer": f"https://{HOST}/admin/login/"},
        )
        assert answer.status_code == 302 and "sessionid" in self.cookies, answer.text[:500]

    def request(self, method: str, url: str, **kwargs) -> httpx.Response:
        headers = {**HTTPS, **kwargs.pop("headers", {})}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        answer = self.http.request(method, url, headers=headers, **kwargs)
        for name, value in answer.cookies.items():
            self.cookies[name] = value
        return answer

    def get(self, url: str) -> httpx.Response:
        return self.request("GET", url)


@pytest.fixture
def server(tmp_path, collected_static):  # noqa: F811
    """gunicorn over a migrated SQLite database holding the large data; yields its URL, the API
    keys, and the worker's process id."""
    database = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    env = production_env(DATABASE_URL=database)
    env.pop("REDIS_URL", None)
    assert manage("migrate", "-v0", env=env).returncode == 0
    made = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SETUP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    keys = json.loads(made.stdout.strip().splitlines()[-1])
    # A long streamed export must not meet the worker timeout; recycling is tested on its own below.
    extra = {"GUNICORN_TIMEOUT": "300", "GUNICORN_MAX_WORKER_MEMORY_MB": "0"}
    with gunicorn(tmp_path, collected_static, **extra) as (base, _, master):
        yield base, keys, master


def test_no_read_path_grows_a_worker_by_more_than_the_bound(server):
    base, keys, master = server
    worker = worker_of(master)
    agent = {"Authorization": f"Api-Key {keys['agent']}", **HTTPS}
    officer = {"Authorization": f"Api-Key {keys['compliance']}", **HTTPS}
    with httpx.Client(base_url=base, timeout=300) as http:
        message = {"role": "user", "content": "m" * (BODY_LIMIT - 200)}  # near the body limit: accepted
        appended = http.post("/api/v1/users/alice/sessions/big/messages/", json=message, headers=agent)
        assert appended.status_code == 201, appended.text[:300]
        staff = Staff(http)

        def api(url: str, headers=agent):
            return lambda: drained(http.get(url, headers=headers))

        def admin(url: str):
            return lambda: drained(staff.get(url))

        def pages(url: str, count: int = 2):
            def read():
                link = url
                for _ in range(count):
                    body = http.get(link, headers=agent).json()
                    assert body["results"]
                    if not body["next"]:
                        break
                    link = httpx.URL(body["next"]).raw_path.decode()  # the link names the proxy's host

            return read

        def session_page():
            listed = staff.get("/admin/sessions_app/session/?q=big").text
            session_pk = re.search(r'href="/admin/sessions_app/session/(\d+)/change/', listed).group(1)
            drained(staff.get(f"/admin/sessions_app/session/{session_pk}/change/"))

        history = "/api/v1/users/alice/sessions/big/messages/"
        reads = {
            "history, largest page": pages(history + "?page_size=2000"),
            "history, pages of 500": pages(history + "?page_size=500"),
            "history, default pages": pages(history),
            "recent 500": api(history + "?recent=500"),
            "session list": api("/api/v1/sessions/?page_size=2000"),
            "user data": pages("/api/v1/users/alice/data/?page_size=500"),
            "ADK get_session": api("/api/v1/adk/apps/app/users/alice/sessions/adk/"),
            "ADK list_sessions": api("/api/v1/adk/apps/app/sessions/?page_size=500"),
            "LangGraph list": pages("/api/v1/langgraph/checkpoints/?thread_id=graph&page_size=500"),
            "LangGraph get": api("/api/v1/langgraph/checkpoint/?thread_id=graph&checkpoint_ns="),
            "admin session page": session_page,
            "admin message list": admin("/admin/sessions_app/message/"),
            "admin ADK event list": admin("/admin/sessions_app/adkevent/"),
            "subject export": api("/api/v1/compliance/users/alice/export/", headers=officer),
            "admin printable export": admin(f"/admin/userdata_app/accessrequest/{keys['access_request']}/export.html"),
        }
        grown = {name: round(growth_mib(worker, read)) for name, read in reads.items()}  # MiB
        assert worker_of(master) == worker  # the same worker throughout
        assert max(grown.values()) < GROWTH_BOUND_MIB, grown


def live(base: str) -> httpx.Response:
    # A worker that was just replaced may still be importing Django on a loaded machine.
    return httpx.get(base + "/livez", headers=HTTPS, timeout=30)


def test_a_worker_past_the_memory_bound_is_replaced_after_its_request(tmp_path, collected_static):  # noqa: F811
    """gunicorn has no memory limit of its own: gunicorn.conf.py's post_request hook ends a worker
    whose resident memory passed GUNICORN_MAX_WORKER_MEMORY_MB once its answer is sent."""
    with gunicorn(tmp_path, collected_static, GUNICORN_MAX_WORKER_MEMORY_MB="100000") as (base, logged, master):
        kept = worker_of(master)
        assert live(base).status_code == 200
        time.sleep(0.5)
        assert worker_of(master) == kept  # under the bound: kept
    with gunicorn(tmp_path, collected_static, GUNICORN_MAX_WORKER_MEMORY_MB="1") as (base, logged, master):
        first = worker_of(master)
        assert live(base).status_code == 200  # answered in full
        for _ in range(200):  # then it exits, and the master starts another, which answers
            try:
                if worker_of(master) != first and live(base).status_code == 200:
                    break
            except (ValueError, httpx.TransportError):  # between the two workers
                pass
            time.sleep(0.05)
        else:
            pytest.fail("the worker was not replaced")
        assert "Recycling worker at" in logged()
