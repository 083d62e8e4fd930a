"""A thread's first page of checkpoints (what ``get_state_history`` reads) is read by a written-out
statement; any other page by the ORM's query. Both must answer the same bytes: the view serves a
request with an empty ``cursor=`` (the first page too) the ORM's way, so each first page here is
read both ways and compared, in JSON and msgpack, on a thread with two namespaces, pending writes,
values shared between checkpoints and a page budget that ends pages early."""

from urllib.parse import parse_qs, urlsplit

import ormsgpack
import pytest
from django.db import connection

from backends.langgraph.process import services

pytestmark = pytest.mark.django_db
LIST = "/api/v1/langgraph/checkpoints/"


def _checkpoint(step: int) -> dict:
    return {"type": "msgpack", "data": ormsgpack.packb({"v": 4, "id": f"c{step:03}", "channel_values": {"step": step}})}


@pytest.fixture
def thread(tenant):
    for step in range(12):
        key = {"thread_id": "t", "user_id": None, "default_user_id": "u1", "checkpoint_id": f"c{step:03}"}
        key["checkpoint_ns"] = "" if step % 3 else "sub:1"
        services.checkpoint_put(
            tenant=tenant,
            **key,
            parent_checkpoint_id=f"c{step - 1:03}" if step else None,
            checkpoint=_checkpoint(step),
            # an integer past 64 bits: read as an integer both ways
            metadata={"step": step, "source": "loop", "run_id": f"r{step % 2}", "note": "é" * (step * 40), "n": 2**70},
            channel_versions={"messages": step // 2, "step": step},
            channel_values=[
                {"channel": "messages", "type": "msgpack", "data": ormsgpack.packb(["m"] * (step + 1) * 30)}
            ],
        )
        write = {"channel": "messages", "value": {"type": "msgpack", "data": ormsgpack.packb("w" * 90)}}
        for task in ("b", "a")[: step % 3]:
            writes = [{"idx": idx, **write} for idx in range(2)]
            services.writes_put(tenant=tenant, **key, task_id=task, task_path=f"~{task}", replace=False, writes=writes)
    other = {"thread_id": "other", "user_id": None, "default_user_id": "u2", "checkpoint_ns": "", "checkpoint_id": "c5"}
    services.checkpoint_put(  # another user's thread, never listed with this one
        tenant=tenant, **other, parent_checkpoint_id=None, checkpoint=_checkpoint(5), metadata={}, channel_versions={}
    )


def _with_statements(call, *args, **kwargs):
    """``call(*args, **kwargs)``'s result and the SQL of the statements it ran."""
    statements: list[str] = []

    def recorded(execute, sql, *args):
        statements.append(sql)
        return execute(sql, *args)

    with connection.execute_wrapper(recorded):
        return call(*args, **kwargs), statements


QUICK = [  # every filter once, with a budget that ends pages early
    "thread_id=t&checkpoint_ns=&before=c011",
    "thread_id=t&checkpoint_ns=sub:1&checkpoint_id=c006&user_id=u1",
    'thread_id=t&filter={"source":"loop"}&page_size=3',  # a metadata filter: the ORM's way both times
]
QUERIES = [
    "thread_id=t",
    "thread_id=t&page_size=1",
    "thread_id=t&page_size=5",
    "thread_id=t&checkpoint_ns=",
    "thread_id=t&checkpoint_ns=sub:1&page_size=2",
    "thread_id=t&before=c007&page_size=3",
    "thread_id=t&checkpoint_id=c005",
    "thread_id=t&user_id=u1&page_size=4",
    "thread_id=t&user_id=u2",
    "thread_id=missing",
    "thread_id=other",
]
CASES = [(query, 1_500) for query in QUICK] + [
    pytest.param(query, budget, marks=pytest.mark.slow)
    for query in QUICK + QUERIES
    for budget in (4 * 1024 * 1024, 1_500, 1)
    if (query, budget) not in {(q, 1_500) for q in QUICK}
]


@pytest.mark.parametrize("query, budget", CASES)
def test_a_first_page_answers_the_same_bytes_as_the_orm_page(api, thread, settings, query, budget):
    settings.PAGE_MAX_BYTES = budget
    for accept in ("application/json", "application/msgpack"):
        for values in ("&channel_values=separate", ""):
            url = f"{LIST}?{query}{values}"
            first, statements = _with_statements(api.get, url, HTTP_ACCEPT=accept)
            orm = api.get(url + "&cursor=", HTTP_ACCEPT=accept)
            assert (first.status_code, first.content) == (orm.status_code, orm.content), url
            served = any("UNBOUNDED PRECEDING" in sql for sql in statements)
            assert served == ("filter" not in query), url  # the statement that serves it, or the ORM's


def test_following_a_first_page_reads_every_checkpoint_once(api, thread, settings):
    settings.PAGE_MAX_BYTES = 1_500
    url, seen, pages = f"{LIST}?thread_id=t&channel_values=separate", [], 0
    while url:
        body = api.get(url).json()
        seen += [c["checkpoint_id"] for c in body["results"]]
        url, pages = body["next"], pages + 1
    assert seen == [f"c{step:03}" for step in reversed(range(12))]
    assert pages > 2


def _cursor(link: str | None) -> str | None:
    return None if link is None else parse_qs(urlsplit(link).query)["cursor"][0]


@pytest.mark.parametrize("budget", [1_500, 4 * 1024 * 1024])
@pytest.mark.parametrize("accept", ["application/msgpack", "application/json"])
def test_a_threads_next_pages_answer_as_the_orms(api, thread, settings, budget, accept):
    """A thread's pages after the first (a plain ``next`` link) are read by the written-out statement
    too, and answer the rows and links the ORM's page gives: here the same checkpoints listed by
    their user (u1 owns only thread t), which the ORM serves, page after page."""
    settings.PAGE_MAX_BYTES = budget
    pages = {"thread_id=t": [], "user_id=u1": []}
    for query, walked in pages.items():
        url = f"{LIST}?{query}&page_size=3&channel_values=separate"
        while url:
            answer, statements = _with_statements(api.get, url, HTTP_ACCEPT=accept)
            assert answer.status_code == 200, answer.content
            if accept == "application/json":
                body = answer.json()
            else:
                body = ormsgpack.unpackb(answer.content, ext_hook=lambda code, data: int(data))
            served = any("UNBOUNDED PRECEDING" in sql for sql in statements)
            walked.append((body["results"], _cursor(body["next"]), _cursor(body["previous"]), served))
            url = body["next"]
    fast, orm = pages["thread_id=t"], pages["user_id=u1"]
    assert [page[:3] for page in fast] == [page[:3] for page in orm]
    assert len(fast) > 2
    assert all(page[3] for page in fast)
    assert not any(page[3] for page in orm)
