"""End to end (issue 9, "Done when"): a subject with data in every table, written through the API,
viewed and exported through the admin, erased with scope "everything" through the admin by a
compliance officer. Afterwards the raw database (SQLite: the file and its WAL; PostgreSQL:
``pg_dump`` and ``pg_stats``), Redis (every key and value of its database) and the captured logs
hold neither the subject's id nor any value stored about it (the access log, which keeps who saw
the person's data, included), while bystanders whose ids differ only by whitespace or case keep
every row."""

import base64
import glob
import io
import json
import logging
import shutil
import struct
import subprocess
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.storage import storages
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from agentstate.integrations.adk_memory import memory_namespace
from agentstate.logging import JsonFormatter
from agentstate.tenancy import selectors as tenancy_selectors
from agentstate.tenancy.services import api_key_create, tenant_get_or_create
from sessions_app.models import Session
from tests.api.assertions import streamed
from tests.subjects import held
from tests.userdata_app.erasure_factories import compliance_group, erasure_request_added
from tests.userdata_app.residue import pg_stats_text
from userdata_app.access_log.chain import chain_verify
from userdata_app.access_log.selectors import subject_accesses
from userdata_app.memory.selectors import user_label
from userdata_app.models import ErasureRequest

# The subject's id ends with an EM SPACE (U+2003), stored exactly as the API received it; the
# bystanders' ids are the same without it, and the same with another case.
SUBJECT = "carol-5e1b\u2003"
BYSTANDERS = ("carol-5e1b", "Carol-5e1b\u2003")
CHANGELIST = "/admin/userdata_app/erasurerequest/"

pytestmark = pytest.mark.django_db(transaction=True)


def id_forms(user_id: str) -> list[bytes]:
    """The id as it may appear in bytes: UTF-8, JSON-escaped, percent-encoded (a URL)."""
    return [user_id.encode(), json.dumps(user_id)[1:-1].encode(), quote(user_id, safe="").encode()]


def markers_of(person: int) -> dict[str, str]:
    """A value no one else stores, for every kind of value stored about a person."""
    token = uuid.uuid4().hex[:10]
    kinds = (
        "metadata",
        "message",
        "name",
        "round",
        "working",
        "reason",
        "transition",
        "email",
        "preference",
        "graph",
        "channel_value",
        "write",
        "popped",
        "adk_text",
        "adk_state",
        "adk_user",
        "memory_key",
        "memory",
        "adk_memory",
        "vector",
        "artifact_name",
        "artifact",
        "usage",
    )
    return {kind: f"{kind}-{person}-{token}" for kind in kinds}


def _graph_value(note: str) -> dict:
    """A LangGraph value as the saver sends it: the serializer's type and bytes (base64)."""
    return {"type": "json", "data": base64.b64encode(json.dumps({"channel_values": {"note": note}}).encode()).decode()}


def store_everything(api: APIClient, user_id: str, marks: dict[str, str]) -> None:
    """Through the API: two sessions, each with messages, a round, working state, a checkpoint
    (promoted from the working state), a transition and a turn's usage; a LangGraph thread with a checkpoint, its
    channel value and a pending write; a popped message; an ADK session with an event (and its user: state); and two
    keys of user data."""
    # It writes through both backends' APIs: left out, the import skips its test (conftest.py).
    import backends.adk
    import backends.langgraph  # noqa: F401

    user = quote(user_id, safe="")
    graph = {
        "thread_id": f"thread-{marks['graph']}",
        "user_id": user_id,
        "default_user_id": "nobody",
        "checkpoint_ns": "",
        "checkpoint_id": "c1",
    }
    for url, body in (
        (
            "/api/v1/langgraph/checkpoints/",
            {
                **graph,
                "checkpoint": _graph_value(marks["graph"]),
                "metadata": {"source": "input", "step": 0},
                "channel_versions": {"messages": 1},
                "channel_values": [{"channel": "messages", **_graph_value(marks["channel_value"])}],
            },
        ),
        (
            "/api/v1/langgraph/writes/",
            {
                **graph,
                "task_id": "task-1",
                "writes": [{"idx": 0, "channel": "messages", "value": _graph_value(marks["write"])}],
            },
        ),
    ):
        response = api.post(url, body, format="json")
        assert response.status_code in (200, 201, 204), (url, response.content)
    # A Google ADK session with one event whose user: delta is user data, the rest process state.
    adk = f"/api/v1/adk/apps/travel/users/{user}/sessions/"
    event = {
        "id": "e1",
        "invocation_id": "i1",
        "author": "user",
        "timestamp": 1_700_000_000.0,
        "content": {"role": "user", "parts": [{"text": marks["adk_text"]}]},
        "actions": {"state_delta": {"note": marks["adk_state"], "user:home": marks["adk_user"]}},
    }
    for url, body in ((adk, {"session_id": "adk-1"}), (adk + "adk-1/events/", {"event": json.dumps(event)})):
        response = api.post(url, body, format="json")
        assert response.status_code in (200, 201), (url, response.content)
    for n in (1, 2):
        base = f"/api/v1/users/{user}/sessions/s{n}"
        calls = [
            (
                "post",
                "/api/v1/sessions/",
                {"user_id": user_id, "session_id": f"s{n}", "metadata": {"note": marks["metadata"]}},
            ),
            (
                "post",
                f"{base}/messages/",
                {"messages": [{"role": "user", "content": marks["message"], "name": marks["name"]}]},
            ),
            # A pop keeps a copy of what it removed (for its retries): that copy is about them too.
            ("post", f"{base}/messages/", {"messages": [{"role": "assistant", "content": marks["popped"]}]}),
            ("post", f"{base}/messages/pop/", {"idempotency_key": f"pop-{n}"}),
            ("post", f"{base}/rounds/", {"state": {"note": marks["round"]}}),
            ("patch", f"{base}/working-state/", {"task": marks["working"]}),
            ("post", f"{base}/checkpoints/", {"label": "done"}),
            (
                "post",
                f"{base}/transitions/",
                {
                    "to_agent": "writer",
                    "from_agent": "planner",
                    "reason": marks["transition"],
                    "metadata": {"why": marks["reason"]},
                },
            ),
        ]
        # A turn's model usage: counts, and details that may carry anything the SDK puts there.
        calls.append(("post", f"{base}/usage/", {"total_tokens": 9, "input_tokens_details": {"note": marks["usage"]}}))
        for method, url, body in calls:
            response = getattr(api, method)(url, body, format="json")
            assert response.status_code in (200, 201), (url, response.content)
    for key, value in (("email", marks["email"]), ("preferences", {"theme": marks["preference"]})):
        response = api.put(f"/api/v1/users/{user}/data/{key}/", {"value": value}, format="json")
        assert response.status_code in (200, 201), response.content
    # A memory item (LangGraph's store): its key and value are about them.
    memory = {
        "op": "put",
        "namespace": ["users", user_label(user_id), "notes"],
        "key": marks["memory_key"],
        "value": {},
    }
    memory["value"] = {"note": marks["memory"]}
    # Its embedding (semantic search): float32 bytes that spell the mark (ASCII bytes: finite floats).
    spelled = marks["vector"].encode().ljust(-(-len(marks["vector"]) // 4) * 4)
    memory["vectors"] = [{"path": "note", "vector": struct.unpack(f"<{len(spelled) // 4}f", spelled)}]
    # An ADK memory (AgentStateMemoryService): an item of the same table under the ADK layout.
    adk_memory = {
        "op": "put",
        "namespace": memory_namespace("notes_app", user_id),
        "key": f"event-{marks['memory_key']}",
        "value": {"text": marks["adk_memory"], "author": "user"},
        "only_if": "absent",
    }
    response = api.post("/api/v1/store/batch/", {"ops": [memory, adk_memory]}, format="json")
    assert response.status_code == 200, response.content
    # An artifact (ADK's artifact service): its name in the database, its bytes in storage.
    artifact = {
        "filename": f"user:{marks['artifact_name']}.pdf",
        "artifact": {
            "inline_data": {
                "mime_type": "application/pdf",
                "data": base64.b64encode(marks["artifact"].encode()).decode(),
            }
        },
    }
    response = api.post(f"/api/v1/adk/apps/files/users/{quote(user_id, safe='')}/artifacts/", artifact, format="json")
    assert response.status_code == 201, response.content


def holdings(tenant, user_id) -> dict[str, int]:
    return held(tenant=tenant, user_id=user_id)


FULL = {
    "user_data": 2,
    "sessions": 4,
    "messages": 2,
    "message_pops": 2,
    "rounds": 2,
    "checkpoints": 2,
    "transitions": 2,
    "run_usage": 2,
    "working_state": 2,
    "langgraph_threads": 1,
    "langgraph_checkpoints": 1,
    "langgraph_writes": 1,
    "langgraph_channel_values": 1,
    "adk_events": 1,
    "adk_user_state": 2,
    "memories": 2,
    "artifacts": 1,
}


def artifact_files() -> bytes:
    """Every file of the artifacts' storage directory, raw."""
    root = Path(storages["artifacts"].location)
    return b"".join(path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file())


@pytest.fixture
def raw_database(request):
    """A function returning the raw bytes the database holds: SQLite's file and its WAL, or a
    ``pg_dump`` of the test database plus every value in ``pg_stats``."""
    if connection.vendor == "sqlite":
        path = request.getfixturevalue("sqlite_file")
        wal = path.with_name(path.name + "-wal")
        return lambda: path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_dump")) or [shutil.which("pg_dump")]
    if not binaries[-1]:
        pytest.skip("pg_dump is missing (apt-get install postgresql-client)")
    db = connection.settings_dict

    def dump() -> bytes:
        command = [
            binaries[-1],
            "--no-owner",
            "-h",
            db["HOST"] or "localhost",
            "-p",
            str(db["PORT"] or 5432),
            "-U",
            db["USER"],
            db["NAME"],
        ]
        result = subprocess.run(
            command, capture_output=True, check=True, env={"PGPASSWORD": db["PASSWORD"] or ""}, timeout=120
        )
        return result.stdout + pg_stats_text().encode()

    return dump


def redis_contents() -> bytes:
    """Every key and value in the Redis database the settings use (working state and cache)."""
    if not settings.REDIS_URL:
        return b""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    read = {
        b"string": client.get,
        b"hash": lambda k: b"".join(a + b for a, b in client.hgetall(k).items()),
        b"list": lambda k: b"".join(client.lrange(k, 0, -1)),
        b"set": lambda k: b"".join(client.smembers(k)),
        b"zset": lambda k: b"".join(client.zrange(k, 0, -1)),
    }
    return b"".join(key + (read.get(client.type(key), lambda k: b"")(key) or b"") for key in client.scan_iter())


@pytest.fixture
def captured_logs():
    """What the configured log handlers (the JSON console handlers) write during the test."""
    buffer = io.StringIO()
    handlers = {
        handler
        for name in ("", "django", "agentstate")
        for handler in logging.getLogger(name).handlers
        if isinstance(handler.formatter, JsonFormatter)
    }
    previous = [(handler, handler.setStream(buffer)) for handler in handlers]
    yield buffer
    for handler, stream in previous:
        handler.setStream(stream)


def needles(marks: dict[str, str]) -> dict[str, list[bytes]]:
    """Each mark as text and as hex: pg_dump writes binary columns (LangGraph's values) in hex."""
    return {kind: [value.encode(), value.encode().hex().encode()] for kind, value in marks.items()}


def found(needles: dict[str, list[bytes]], haystack: bytes) -> list[str]:
    return [name for name, forms in needles.items() if any(form in haystack for form in forms)]


def test_an_erasure_through_the_admin_leaves_nothing_of_the_subject_anywhere(raw_database, captured_logs):
    tenant = tenant_get_or_create(slug="acme")
    tenancy_selectors.api_key_cache_clear()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name='agent')[1]}")
    people = (SUBJECT, *BYSTANDERS)
    marks = {user_id: markers_of(n) for n, user_id in enumerate(people)}
    for user_id in people:
        store_everything(api, user_id, marks[user_id])
    assert [holdings(tenant, user_id) for user_id in people] == [FULL] * len(people)
    # Every category of the map of people's data is written (holdings count them all), so a model
    # declared later must be written here too and the raw search below looks for its values.
    assert all(FULL.values())
    subject_needles = {"id": id_forms(SUBJECT), **needles(marks[SUBJECT])}
    in_database = [kind for kind in subject_needles if kind != "artifact"]  # an artifact's bytes are in storage
    assert found(subject_needles, raw_database()) == in_database  # the search can find them
    assert found(subject_needles, artifact_files()) == ["artifact"]

    officer = get_user_model().objects.create_user("officer", is_staff=True)
    officer.groups.add(compliance_group())
    admin = Client()
    admin.force_login(officer)
    # Staff look the person up and open what is stored.
    session = Session.objects.get(tenant=tenant, user_id=SUBJECT, session_id="s1")
    for url in (
        "/admin/sessions_app/session/",
        f"/admin/sessions_app/session/{session.pk}/change/",
        f"/admin/sessions_app/message/?session__id__exact={session.pk}",
        "/admin/userdata_app/userdatum/",
    ):
        assert admin.get(url).status_code == 200, url

    # The request, recorded and verified in the admin, then the person's data exported.
    request = erasure_request_added(admin, tenant, SUBJECT)
    verified = admin.post(f"{CHANGELIST}{request.pk}/lifecycle/verify/", {"identity_check": "reply by e-mail"})
    assert verified.status_code == 302
    export = admin.get(f"{CHANGELIST}{request.pk}/export/")
    assert export.status_code == 200
    body = streamed(export).decode()
    exported = json.loads(body)
    assert [s["user_id"] for s in exported["subjects"]] == [SUBJECT]  # this person, nobody else
    assert marks[SUBJECT]["message"] in body
    assert not any(value in body for user_id in BYSTANDERS for value in marks[user_id].values())
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # as autovacuum would have: the statistics sample the subject's values

    # Executed from the confirmation page.
    assert admin.post(CHANGELIST, {"action": "execute_erasure", "_selected_action": [request.pk]}).status_code == 200
    done = admin.post(CHANGELIST, {"action": "execute_erasure", "_selected_action": [request.pk], "post": "yes"})
    assert done.status_code == 302
    request.refresh_from_db()
    assert request.status == ErasureRequest.Status.EXECUTED and request.storage_pending == ""
    assert admin.get(f"{CHANGELIST}{request.pk}/change/").status_code == 200

    assert holdings(tenant, SUBJECT) == dict.fromkeys(FULL, 0)
    for user_id in BYSTANDERS:
        assert holdings(tenant, user_id) == FULL, user_id
    stored = raw_database()
    assert found(subject_needles, stored) == []
    for user_id in BYSTANDERS:  # still there, byte for byte
        in_database = {kind: forms for kind, forms in needles(marks[user_id]).items() if kind != "artifact"}
        assert found(in_database, stored) == list(in_database)
    assert found(subject_needles, redis_contents()) == []
    assert found(subject_needles, artifact_files()) == []  # the files went once the erasure committed
    for user_id in BYSTANDERS:
        assert found({"artifact": [marks[user_id]["artifact"].encode()]}, artifact_files()) == ["artifact"]
    assert found(subject_needles, captured_logs.getvalue().encode()) == []
    # The access log, searched with the rest of the database above, still says who saw, exported
    # and erased the person's data: by keyed hash, and its chain intact.
    logged = subject_accesses(tenant_slug="acme", user_id=SUBJECT).values_list("action", flat=True)
    assert {"view", "list", "export", "erasure"} <= set(logged)
    assert chain_verify(tenant="acme").ok
