"""Requests the hardening tests send: every write with a body it would accept, and the check that
a refused one changes nothing stored."""

import json

from tests.api.assertions import assert_error
from tests.hardening.stored import stored_everything

S = "/api/v1/users/u1/sessions/s1/"  # the full_session fixture's session
U = "/api/v1/users/u1/data/"


# Every endpoint that takes a body, with a body it would accept.
WRITES = [
    ("post", "/api/v1/sessions/", {"user_id": "u1", "session_id": "s2"}),
    ("patch", S, {"metadata": {"x": 1}}),
    ("post", S + "messages/", {"messages": [{"content": "x"}]}),
    ("post", S + "rounds/", {"state": {"x": 1}}),
    ("put", S + "rounds/1/", {"state": {"x": 1}}),
    ("post", S + "checkpoints/", {"label": "cp2", "state": {"x": 1}}),
    ("put", S + "working-state/", {"x": 1}),
    ("patch", S + "working-state/", {"x": 1}),
    ("post", S + "transitions/", {"to_agent": "c"}),
    ("post", S + "usage/", {"turn": 1, "input_tokens": 3, "input_tokens_details": {"cached_tokens": 1}}),
    ("put", U + "email/", {"value": "b@example.com"}),
]
WRITE_IDS = [f"{method} {path}" for method, path, _ in WRITES]


def send(client, method: str, path: str, body, **extra):
    if method in ("get", "delete"):
        return getattr(client, method)(path, **extra)
    raw = body if isinstance(body, str) else json.dumps(body)
    extra.setdefault("content_type", "application/json")
    return getattr(client, method)(path, raw, **extra)


def refused(client, method, path, body, status, code, field=None, **extra):
    """Send the request, check the error, and check nothing stored changed."""
    before = stored_everything()
    error = assert_error(send(client, method, path, body, **extra), status, code, field)
    assert stored_everything() == before
    return error


# Writes for one subject (u1), each formatted with a per-thread number ``{n}``.
WRITES_BY_SUBJECT = [
    ("put", "/api/v1/users/u1/data/email/", {"value": "again@example.com"}),
    ("put", "/api/v1/users/u1/data/k{n}/", {"value": "{n}"}),
    ("post", "/api/v1/sessions/", {"user_id": "u1", "session_id": "new-{n}"}),
    ("post", "/api/v1/users/u1/sessions/s0/messages/", {"content": "{n}"}),
    ("post", "/api/v1/users/u1/sessions/auto-{n}/rounds/", {"state": {"n": "{n}"}}),
    ("patch", "/api/v1/users/u1/sessions/s0/working-state/", {"k{n}": "{n}"}),
]
