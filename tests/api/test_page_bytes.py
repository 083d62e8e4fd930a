"""Lists of rows that can be large (user data, LangGraph checkpoints with their pending writes)
end a page early once it holds ``PAGE_MAX_BYTES``, like the history (test_json_rows.py): one row
always fits, ``next`` starts at the first row left out, and following it reads every row once."""

import base64
import json

import pytest

from backends.langgraph.process import services as langgraph_services
from userdata_app import services as userdata_services

pytestmark = pytest.mark.django_db


def _read_all(api, url: str) -> list[list[dict]]:
    pages = []
    while url:
        body = json.loads(api.get(url).content)
        pages.append(body["results"])
        url = body["next"]
    return pages


def test_user_data_pages_end_early_at_the_byte_budget(api, tenant, settings):
    values = {f"k{i:02}": "v" * (100 * (i % 4)) for i in range(20)} | {"k99": "large " * 500}
    for key, value in values.items():
        userdata_services.user_datum_set(tenant=tenant, user_id="u1", key=key, value=value)
    settings.PAGE_MAX_BYTES = 1_000

    pages = _read_all(api, "/api/v1/users/u1/data/?page_size=500")
    assert {d["key"]: d["value"] for page in pages for d in page} == values
    assert [d["key"] for page in pages for d in page] == sorted(values)  # each once, in order
    assert len(pages) >= 3
    for page in pages:
        assert sum(len(d["value"]) for d in page[:-1]) < settings.PAGE_MAX_BYTES


def test_langgraph_pages_count_checkpoints_with_their_writes(api, tenant, settings):
    blob = {"type": "bytes", "data": base64.b64encode(b"\x00" * 600).decode()}
    for i in range(8):
        checkpoint_id = f"c{i:03}"
        langgraph_services.checkpoint_put(
            tenant=tenant,
            thread_id="t",
            user_id=None,
            default_user_id="u1",
            checkpoint_ns="",
            checkpoint_id=checkpoint_id,
            parent_checkpoint_id=None,
            checkpoint={"type": "bytes", "data": ""},
            metadata={"step": i},
            channel_versions={},
        )
        if i % 2:  # the bytes are in the writes (and binary: NUL bytes count too)
            langgraph_services.writes_put(
                tenant=tenant,
                thread_id="t",
                user_id=None,
                default_user_id="u1",
                checkpoint_ns="",
                checkpoint_id=checkpoint_id,
                task_id="task",
                task_path="",
                replace=False,
                writes=[{"idx": 0, "channel": "ch", "value": blob}],
            )
    settings.PAGE_MAX_BYTES = 1_000

    pages = _read_all(api, "/api/v1/langgraph/checkpoints/?thread_id=t&page_size=100")
    listed = [c["checkpoint_id"] for page in pages for c in page]
    assert listed == [f"c{i:03}" for i in reversed(range(8))]
    assert len(pages) >= 3
    for page in pages:  # within the budget but for the row that crossed it
        assert sum(600 for c in page[:-1] if c["pending_writes"]) < settings.PAGE_MAX_BYTES
    assert all(
        c["pending_writes"][0]["value"] == blob for page in pages for c in page if int(c["checkpoint_id"][1:]) % 2
    )


def test_adk_session_lists_end_early_at_the_byte_budget(api, tenant, settings):
    from backends.adk.process import services as adk_services

    states = {f"s{i}": {"notes": "n" * (150 * (i % 3))} for i in range(9)}
    for session_id, state in states.items():
        adk_services.adk_session_create(tenant=tenant, app_name="app", user_id="u1", session_id=session_id, state=state)
    settings.PAGE_MAX_BYTES = 500

    pages, cursor = [], None
    while True:
        body = json.loads(api.get("/api/v1/adk/apps/app/sessions/", {"cursor": cursor} if cursor else {}).content)
        pages.append(body["sessions"])
        if not (cursor := body["next"]):
            break
    assert {s["id"]: s["state"] for page in pages for s in page} == states  # each once, state whole
    assert sum(map(len, pages)) == len(states) and len(pages) >= 2
    for page in pages:  # within the budget but for the session that crossed it
        assert sum(len(json.dumps(s["state"], separators=(",", ":"))) for s in page[:-1]) < settings.PAGE_MAX_BYTES


def test_transition_pages_end_early_at_the_byte_budget(api, tenant, settings):
    from sessions_app import services

    session = services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    for i in range(6):
        services.transition_record(session=session, to_agent=f"a{i}", reason="r" * 300, metadata={"i": i})
    settings.PAGE_MAX_BYTES = 500

    pages = _read_all(api, "/api/v1/users/u1/sessions/s1/transitions/")
    assert [t["to_agent"] for page in pages for t in page] == [f"a{i}" for i in range(6)]
    assert all(len(page) == 2 for page in pages)


def test_langgraph_pages_count_the_channel_values_their_checkpoints_name(api, tenant, settings):
    """Values stored apart (one per channel and version) count in the page of each checkpoint
    naming them, as they travel in its answer."""
    value = {"type": "bytes", "data": b"\x00" * 600}
    for i in range(6):
        langgraph_services.checkpoint_put(
            tenant=tenant,
            thread_id="t",
            user_id=None,
            default_user_id="u1",
            checkpoint_ns="",
            checkpoint_id=f"c{i:03}",
            parent_checkpoint_id=None,
            checkpoint={"type": "bytes", "data": b""},
            metadata={"step": i},
            channel_versions={"ch": i},
            channel_values=[{"channel": "ch", **value}],
        )
    settings.PAGE_MAX_BYTES = 1_000

    pages = _read_all(api, "/api/v1/langgraph/checkpoints/?thread_id=t&page_size=100&channel_values=separate")
    assert [c["checkpoint_id"] for page in pages for c in page] == [f"c{i:03}" for i in reversed(range(6))]
    assert len(pages) >= 3  # at most two checkpoints of 600 bytes each in a page of 1,000
    assert all(
        c["channel_values"]
        == [
            {
                "channel": "ch",
                "version": c["checkpoint_id"][-1],
                "value": {"type": "bytes", "data": base64.b64encode(b"\x00" * 600).decode()},
            }
        ]
        for page in pages
        for c in page
    )


def test_langgraph_pages_carry_and_count_a_value_checkpoints_share_once(api, tenant, settings):
    """A thread's checkpoints name the same value until a step changes its channel: a page carries
    it once (null where it repeats) and counts it once, so six checkpoints sharing three values of
    600 bytes fit a page of 2,000 bytes."""
    for i in range(6):
        version = i // 2  # the value changes every other checkpoint
        langgraph_services.checkpoint_put(
            tenant=tenant,
            thread_id="t",
            user_id=None,
            default_user_id="u1",
            checkpoint_ns="",
            checkpoint_id=f"c{i:03}",
            parent_checkpoint_id=f"c{i - 1:03}" if i else None,
            checkpoint={"type": "bytes", "data": b""},
            metadata={"step": i},
            channel_versions={"ch": version},
            channel_values=[{"channel": "ch", "type": "bytes", "data": bytes([version]) * 600}],
        )
    settings.PAGE_MAX_BYTES = 2_000

    (page,) = _read_all(api, "/api/v1/langgraph/checkpoints/?thread_id=t&page_size=100&channel_values=separate")
    values = [(c["checkpoint_id"], v["version"], v["value"]) for c in page for v in c["channel_values"]]
    given = {"type": "bytes", "data": base64.b64encode(bytes([2]) * 600).decode()}
    assert values[:2] == [("c005", "2", given), ("c004", "2", None)]
    assert [(c, v) for c, v, data in values if data is not None] == [("c005", "2"), ("c003", "1"), ("c001", "0")]
