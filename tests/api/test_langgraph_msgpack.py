"""LangGraph's checkpoint reads in msgpack (``Accept: application/msgpack``): the serialized bytes as
they are instead of base64 inside JSON, the same answer otherwise; JSON stays the default and
every error is JSON."""

import base64

import ormsgpack
import pytest

CHECKPOINT_BYTES = bytes(range(256)) * 3
WRITE_BYTES = b"\x00\xffpending"
MSGPACK = "application/msgpack"


def _big_int(code: int, data: bytes) -> int:
    assert code == 1
    return int(data)


@pytest.fixture
def thread(api):
    """A thread with one checkpoint (metadata holding an integer past 64 bits) and one pending write."""
    ids = {"thread_id": "t1", "default_user_id": "alice", "checkpoint_ns": "", "checkpoint_id": "c1"}
    checkpoint = {
        **ids,
        "checkpoint": {"type": "msgpack", "data": base64.b64encode(CHECKPOINT_BYTES).decode()},
        "metadata": {"step": 2**70, "source": "loop"},
        "channel_versions": {},
    }
    assert api.post("/api/v1/langgraph/checkpoints/", checkpoint, format="json").status_code == 201
    write = {
        "idx": 0,
        "channel": "messages",
        "value": {"type": "bytes", "data": base64.b64encode(WRITE_BYTES).decode()},
    }
    writes = {**ids, "task_id": "task-1", "writes": [write]}
    assert api.post("/api/v1/langgraph/writes/", writes, format="json").status_code == 201
    return ids


def _decoded_json(item: dict) -> dict:
    """A JSON answer's checkpoint with its bytes decoded from base64, as msgpack carries them."""
    item["checkpoint"]["data"] = base64.b64decode(item["checkpoint"]["data"])
    for write in item["pending_writes"]:
        write["value"]["data"] = base64.b64decode(write["value"]["data"])
    return item


@pytest.mark.parametrize(
    "path, params",
    [("/api/v1/langgraph/checkpoint/", {"thread_id": "t1"}), ("/api/v1/langgraph/checkpoints/", {"thread_id": "t1"})],
)
def test_a_checkpoint_read_in_msgpack_carries_the_bytes_as_they_are(api, thread, path, params):
    as_json = api.get(path, params)
    as_msgpack = api.get(path, params, HTTP_ACCEPT=MSGPACK)

    assert as_json["Content-Type"] == "application/json"  # still the default
    assert as_msgpack.status_code == 200 and as_msgpack["Content-Type"] == MSGPACK
    answer = ormsgpack.unpackb(as_msgpack.content, ext_hook=_big_int)
    if path.endswith("checkpoints/"):
        assert answer["next"] is None
        (item,) = answer["results"]
        (json_item,) = as_json.json()["results"]
    else:
        item, json_item = answer, as_json.json()
    assert item["checkpoint"] == {"type": "msgpack", "data": CHECKPOINT_BYTES}
    assert item["pending_writes"][0]["value"] == {"type": "bytes", "data": WRITE_BYTES}
    assert item["metadata"]["step"] == 2**70  # past msgpack's 64 bits: its extension type
    assert item == _decoded_json(json_item)


def test_the_format_query_parameter_asks_for_msgpack_too(api, thread):
    response = api.get("/api/v1/langgraph/checkpoint/", {"thread_id": "t1", "format": "msgpack"})
    assert response["Content-Type"] == MSGPACK
    assert ormsgpack.unpackb(response.content, ext_hook=_big_int)["checkpoint"]["data"] == CHECKPOINT_BYTES


@pytest.mark.parametrize(
    "path, params, status",
    [
        ("/api/v1/langgraph/checkpoint/", {"thread_id": "t1", "checkpoint_id": "missing"}, 404),
        ("/api/v1/langgraph/checkpoints/", {"thread_id": "t1", "filter": "[1]"}, 400),
    ],
)
def test_an_error_is_json_when_msgpack_was_asked_for(api, thread, path, params, status):
    response = api.get(path, params, HTTP_ACCEPT=MSGPACK)
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert set(response.json()["error"]) >= {"code", "message"}


def test_the_schema_offers_both_representations_of_the_reads(api):
    paths = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    for path in ("/api/v1/langgraph/checkpoint/", "/api/v1/langgraph/checkpoints/"):
        assert set(paths[path]["get"]["responses"]["200"]["content"]) == {"application/json", MSGPACK}
