"""The activity rule, held by every registered backend's writes: a write to a session retention
ended reopens it and moves ``updated_at``; a write to a session ended otherwise is refused (409)
and stores nothing. The table below names each backend's writes (its one-statement path and its
locked one); a backend registered without an entry fails here until it has one. SQLite and
PostgreSQL."""

import ast
import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from sessions_app import backends
from sessions_app.models import Message, Session

pytestmark = pytest.mark.django_db

REST = "/api/v1/users/u1/sessions/s1/"
ADK = "/api/v1/adk/apps/travel/users/u1/sessions/"
LONG_AGO = timedelta(days=3)


def _ok(response):
    assert response.status_code < 300, response.content
    return response


def _adk_event(event_id: str, delta: dict | None = None, version: int | None = None) -> dict:
    event = {"id": event_id, "author": "user", "timestamp": 1_700_000_000.0, "actions": {"state_delta": delta or {}}}
    return {"event": json.dumps(event), **({} if version is None else {"expected_version": version})}


def _item(client_id: str) -> dict:
    return {"client_id": client_id, "role": "user", "content": "{}"}


def _checkpoint(checkpoint_id: str) -> dict:
    value = {"type": "json", "data": base64.b64encode(b'"state"').decode()}
    return {
        "thread_id": "t1",
        "default_user_id": "u1",
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint_id,
        "checkpoint": value,
        "metadata": {"source": "loop", "step": 1},
        "channel_versions": {},
    }


def _adk_session(api) -> Session:
    _ok(api.post(ADK, {"session_id": "a1"}, format="json"))
    _ok(api.post(ADK + "a1/events/", _adk_event("e1"), format="json"))
    return Session.objects.get(session_id="a1", app_name="travel")


def _adk_version(api) -> int:
    return api.get(ADK + "a1/").json()["version"]


def _thread(api) -> Session:
    _ok(api.post("/api/v1/langgraph/checkpoints/", _checkpoint("c1"), format="json"))
    return Session.objects.get(langgraph_thread__thread_id="t1")


def _sdk_session(api) -> Session:
    metadata = {backends.backend_get("openai_agents").metadata_key: "s1"}  # type: ignore[union-attr]
    _ok(api.post("/api/v1/sessions/", {"user_id": "u1", "session_id": "s1", "metadata": metadata}, format="json"))
    _ok(
        api.post(
            REST + "messages/", {"messages": [{"client_id": "i1", "role": "user", "content": "{}"}]}, format="json"
        )
    )
    return Session.objects.get(session_id="s1", app_name="")


def _adk_events(session: Session) -> int:
    return session.last_seq


def _checkpoints(session: Session) -> int:
    from backends.langgraph.process.models import LangGraphCheckpoint  # installed: its backend is registered

    return LangGraphCheckpoint.objects.filter(session=session).count()


@dataclass(frozen=True)
class Write:
    """One write of a backend's: ``make(api)`` the session, ``write(api)`` the response, ``stored``
    how many rows the session holds (a refused write leaves it as it was)."""

    name: str
    make: Callable
    write: Callable
    stored: Callable[[Session], int]


WRITES: dict[str, tuple[Write, ...]] = {
    "adk": (
        Write(  # PostgreSQL: one statement
            "append",
            _adk_session,
            lambda api: api.post(
                ADK + "a1/events/", {**_adk_event("e2"), "expected_version": _adk_version(api)}, format="json"
            ),
            _adk_events,
        ),
        Write(  # the locked path
            "append with state",
            _adk_session,
            lambda api: api.post(ADK + "a1/events/", _adk_event("e2", {"k": 1}), format="json"),
            _adk_events,
        ),
    ),
    "langgraph": (
        Write(  # PostgreSQL: the thread's later puts go in one statement
            "put",
            _thread,
            lambda api: api.post("/api/v1/langgraph/checkpoints/", _checkpoint("c2"), format="json"),
            _checkpoints,
        ),
    ),
    "openai_agents": (
        Write(
            "add_items",
            _sdk_session,
            lambda api: api.post(REST + "messages/", {"messages": [_item("i2")]}, format="json"),
            lambda s: Message.objects.filter(session=s).count(),
        ),
    ),
}


def _cases():
    return [
        pytest.param(write, id=f"{backend.framework}-{write.name}")
        for backend in backends.backends()
        for write in WRITES.get(backend.framework, ())
    ]


def test_every_registered_backend_has_its_writes_here():
    assert {backend.framework for backend in backends.backends()} <= set(WRITES)


def _end(session: Session, *, by_retention: bool) -> None:
    Session.objects.filter(pk=session.pk).update(
        ended_at=timezone.now() - LONG_AGO, updated_at=timezone.now() - LONG_AGO, ended_by_retention=by_retention
    )


@pytest.mark.parametrize("write", _cases())
def test_a_write_reopens_a_session_retention_ended_and_moves_its_activity_time(api, tenant, write):
    session = write.make(api)
    _end(session, by_retention=True)
    before = write.stored(session)

    _ok(write.write(api))

    session.refresh_from_db()
    assert session.ended_at is None and not session.ended_by_retention
    assert session.updated_at > timezone.now() - timedelta(minutes=1)
    assert write.stored(session) == before + 1


@pytest.mark.parametrize("write", _cases())
def test_a_write_to_a_session_ended_otherwise_is_refused(api, tenant, write):
    session = write.make(api)
    _end(session, by_retention=False)
    before = write.stored(session)

    response = write.write(api)

    assert response.status_code == 409 and response.json()["error"]["code"] == "session_ended", response.content
    session.refresh_from_db()
    assert session.ended_at is not None and session.updated_at < timezone.now() - timedelta(days=1)
    assert write.stored(session) == before


def _session_writes_by_hand(tree: ast.AST, source: str) -> Iterator[int]:
    """Lines of ``tree`` that write a session row without the core's activity rule: an SQL
    ``UPDATE`` of the session table in an f-string, or ``Session.objects....update(...)`` without
    ``activity_changes()``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "{" + ast.unparse(part.value) + "}"
                for part in node.values
            )
            if "UPDATE {" in text and "session" in text.split("UPDATE {", 1)[1].split("}", 1)[0].lower():
                yield node.lineno
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update":
            call = ast.get_source_segment(source, node) or ""
            if call.startswith("Session.objects") and "activity_changes(" not in call:
                yield node.lineno


def test_no_backend_writes_a_session_row_but_through_the_core():
    """What the table above cannot see: a backend's new write. Each of its session-row writes is
    the core's ``activity_update_sql`` or carries ``activity_changes()``."""
    root = Path(__file__).resolve().parents[2] / "backends"
    found = []
    for path in sorted(root.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        source = path.read_text()
        found += [
            f"{path.relative_to(root.parent)}:{line}" for line in _session_writes_by_hand(ast.parse(source), source)
        ]
    assert not found, f"write the session row through sessions_app.services.live: {found}"
