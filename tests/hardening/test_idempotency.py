"""Requests documented as safe to retry: sending one twice leaves the same stored contents as
sending it once (timestamps, versions and TTLs aside), so a client may retry after a timeout."""

import pytest

from tests.hardening.stored import stored_everything
from tests.hardening.writes import S
from tests.quick_loop import first_of_each_kind

pytestmark = pytest.mark.django_db
VOLATILE = {"updated_at", "version", "expires_at", "last_used"}


def contents() -> dict:
    rows = stored_everything()
    return {
        table: [{k: v for k, v in row.items() if k not in VOLATILE} for row in table_rows]
        if isinstance(table_rows, list)
        else table_rows
        for table, table_rows in rows.items()
    }


RETRIED = [
    (
        "post",
        S + "messages/",
        {"messages": [{"client_id": "a", "content": "x"}, {"client_id": "b", "content": "y"}]},
    ),
    ("post", S + "rounds/", {"state": {"x": 1}, "round_id": 7}),
    ("put", S + "rounds/7/", {"state": {"x": 2}}),
    ("put", S + "working-state/", {"x": 1}),
    ("patch", S + "working-state/", {"x": 2, "kept": None}),
    ("patch", S, {"metadata": {"x": 1}, "agent_id": "a2"}),
    ("post", S + "end/", None),
    ("post", S + "messages/pop/", {"idempotency_key": "pop-1"}),
    ("post", S + "messages/rewind/", {"after_seq": 1, "after_round": 1}),
    ("post", S + "messages/clear/", None),
    ("put", "/api/v1/users/u1/data/email/", {"value": "b@example.com"}),
    ("delete", S + "rounds/1/", None),
    ("delete", "/api/v1/users/u1/data/email/", None),
    ("delete", S + "working-state/", None),
    ("delete", S, None),
]


# The quick loop retries the first request of each method; the slow set every one.
@pytest.mark.parametrize(
    "method, path, body", first_of_each_kind(RETRIED, [f"{m} {p}" for m, p, _ in RETRIED], lambda c: c[0])
)
def test_a_retried_request_changes_nothing_more(api, full_session, method, path, body):
    def send():
        response = getattr(api, method)(path, body, format="json") if body is not None else getattr(api, method)(path)
        assert response.status_code < 500
        return response

    first = send()
    assert first.status_code in (200, 201, 204), first.content
    after_once = contents()
    second = send()
    assert second.status_code in (200, 201, 204, 404), second.content  # a repeated DELETE finds nothing
    assert contents() == after_once
