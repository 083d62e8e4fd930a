"""Every endpoint runs the same number of queries against a session with 10 and with 2,000
messages, rounds, checkpoints and transitions (and a user with 10 or 2,000 sessions and keys),
and a small number at that. The API key is cached after the first request: auth costs no query."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app import services
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, RunUsage, Session
from userdata_app.models import UserDatum

pytestmark = pytest.mark.django_db
# The largest is a session's delete: one DELETE per table that hangs off sessions (messages, kept
# pops, rounds, checkpoints, transitions, usage, working state, ADK events and artifacts, the LangGraph
# checkpointer's thread, checkpoints, channel values and writes, the sources of memories made from
# it and those memories), one UPDATE that unlinks its forks, and the legal-hold check (the tenant's
# hold lock — on PostgreSQL an advisory lock, one statement more — then the holds), whatever the rows.
MAX_QUERIES = 23


def populate(tenant, name: str, n: int) -> None:
    """User ``name`` with session ``name`` holding n of everything, and n - 1 more sessions and n keys."""
    session = services.session_create(tenant=tenant, user_id=name, session_id=name)
    Message.objects.bulk_create(
        Message(
            session=session,
            tenant=tenant,
            user_id=name,
            seq=i,
            role="user" if i % 2 else "assistant",
            client_id=f"c{i}",
            content=f"m{i}",
        )
        for i in range(1, n + 1)
    )
    Round.objects.bulk_create(
        Round(session=session, tenant=tenant, user_id=name, round_id=i, state={"i": i}) for i in range(1, n + 1)
    )
    Checkpoint.objects.bulk_create(
        Checkpoint(session=session, tenant=tenant, user_id=name, label="cp", state={}) for _ in range(n)
    )
    RunUsage.objects.bulk_create(
        RunUsage(session=session, tenant=tenant, user_id=name, turn=i, total_tokens=i) for i in range(n // 2 + 1)
    )
    AgentTransition.objects.bulk_create(
        AgentTransition(session=session, tenant=tenant, user_id=name, to_agent="a") for _ in range(n)
    )
    Session.objects.filter(pk=session.pk).update(last_seq=n, message_count=n, last_round_id=n)
    Session.objects.bulk_create(Session(tenant=tenant, user_id=name, session_id=f"{name}-{i}") for i in range(n - 1))
    UserDatum.objects.bulk_create(UserDatum(tenant=tenant, user_id=name, key=f"k{i}", value=i) for i in range(n))


# (method, path under /api/v1/ with {u} for the user/session name, body)
REQUESTS = [
    ("get", "sessions/?user_id={u}", None),
    ("get", "sessions/?user_id={u}&ended=false&page_size=500", None),
    ("post", "sessions/", {"user_id": "{u}", "session_id": "new"}),
    ("get", "users/{u}/sessions/{u}/", None),
    ("patch", "users/{u}/sessions/{u}/", {"metadata": {"a": 1}}),
    ("get", "users/{u}/sessions/{u}/restore/", None),
    ("get", "users/{u}/sessions/{u}/messages/", None),
    ("get", "users/{u}/sessions/{u}/messages/?after_seq=5&role=user", None),
    ("get", "users/{u}/sessions/{u}/messages/?recent=20", None),
    ("post", "users/{u}/sessions/{u}/messages/", {"messages": [{"content": "x"}, {"content": "y"}]}),
    ("post", "users/{u}/sessions/{u}/messages/", {"messages": [{"client_id": "c1"}, {"client_id": "fresh"}]}),
    ("get", "users/{u}/sessions/{u}/rounds/", None),
    ("post", "users/{u}/sessions/{u}/rounds/", {"state": {"x": 1}}),
    ("get", "users/{u}/sessions/{u}/rounds/latest/", None),
    ("get", "users/{u}/sessions/{u}/rounds/5/", None),
    ("put", "users/{u}/sessions/{u}/rounds/5/", {"state": {"x": 2}}),
    ("delete", "users/{u}/sessions/{u}/rounds/3/", None),
    ("get", "users/{u}/sessions/{u}/checkpoints/", None),
    ("post", "users/{u}/sessions/{u}/checkpoints/", {"label": "cp"}),
    ("get", "users/{u}/sessions/{u}/checkpoints/latest/?label=cp", None),
    ("put", "users/{u}/sessions/{u}/working-state/", {"a": 1}),
    ("patch", "users/{u}/sessions/{u}/working-state/", {"b": 1}),
    ("get", "users/{u}/sessions/{u}/working-state/", None),
    ("delete", "users/{u}/sessions/{u}/working-state/", None),
    ("get", "users/{u}/sessions/{u}/transitions/", None),
    ("post", "users/{u}/sessions/{u}/transitions/", {"to_agent": "b"}),
    ("get", "users/{u}/sessions/{u}/usage/", None),
    ("post", "users/{u}/sessions/{u}/usage/", {"total_tokens": 5, "input_tokens_details": {"cached_tokens": 1}}),
    ("get", "users/{u}/data/", None),
    ("get", "users/{u}/data/k3/", None),
    ("put", "users/{u}/data/k3/", {"value": 1}),
    ("delete", "users/{u}/data/k4/", None),
    ("post", "users/{u}/sessions/{u}/fork/", {"new_session_id": "fork", "up_to_seq": 8, "up_to_round": 8}),
    ("post", "users/{u}/sessions/{u}/messages/pop/", {"idempotency_key": "p1"}),
    ("post", "users/{u}/sessions/{u}/messages/pop/", None),
    ("post", "users/{u}/sessions/{u}/messages/pop/", {"idempotency_key": "p1"}),
    ("post", "users/{u}/sessions/{u}/messages/rewind/", {"after_seq": 5, "after_round": 5}),
    ("post", "users/{u}/sessions/{u}/messages/clear/", None),
    ("post", "users/{u}/sessions/{u}/end/", None),
    ("delete", "users/{u}/sessions/{u}/", None),
]


def _run(api, method, template, body, name):
    path = "/api/v1/" + template.format(u=name)
    if body is None:
        return getattr(api, method)(path)
    import json

    return getattr(api, method)(path, json.loads(json.dumps(body).replace("{u}", name)), format="json")


def test_query_counts_do_not_grow_with_data(api, tenant):
    populate(tenant, "small", 10)
    populate(tenant, "big", 2000)
    api.get("/api/v1/sessions/")  # warms the key cache
    for method, template, body in REQUESTS:
        counts = {}
        for name in ("small", "big"):
            with CaptureQueriesContext(connection) as queries:
                response = _run(api, method, template, body, name)
            assert response.status_code < 400, (method, template, response.content)
            counts[name] = len(queries)
        assert counts["small"] == counts["big"] <= MAX_QUERIES, (method, template, counts)


def test_django_assert_num_queries_on_the_hot_paths(api, tenant, django_assert_num_queries):
    """The agent's loop, with exact counts: read the session, append, read history, save a round."""
    populate(tenant, "big", 2000)
    api.get("/api/v1/sessions/")
    with django_assert_num_queries(1):
        api.get("/api/v1/users/big/sessions/big/")
    # the session, one page of history: on PostgreSQL in one statement
    with django_assert_num_queries(1 if connection.vendor == "postgresql" else 2):
        api.get("/api/v1/users/big/sessions/big/messages/?after_seq=1990")
    with django_assert_num_queries(1):  # the latest round, found through its session in one query
        api.get("/api/v1/users/big/sessions/big/rounds/latest/")
