"""Staff's JSON view of a LangGraph value is rendered by the server from the serializer's bytes:
what staff and a subject export see matches LangGraph's own msgpack-to-JSON reading of them."""

import base64
import json
import uuid
from dataclasses import dataclass

import ormsgpack
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer, _msgpack_ext_hook_to_json
from pydantic import BaseModel

from backends.langgraph.process.staff_view import staff_view


class Profile(BaseModel):
    name: str
    tags: list[str]


@dataclass
class Note:
    text: str
    pinned: bool


VALUES = [
    {"messages": [HumanMessage("Hi, I'm Ada", id="m1"), AIMessage("Hello Ada!", id="m2")]},
    ToolMessage("42 °C", tool_call_id="call-1"),
    Profile(name="Ada", tags=["vip"]),
    Note("call back", pinned=True),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    {"nested": [1, 2.5, None, True, "NUL \x00 and \ue000 kept"]},
]


def langgraphs_own_view(type_: str, data: bytes):
    value = ormsgpack.unpackb(data, ext_hook=_msgpack_ext_hook_to_json, option=ormsgpack.OPT_NON_STR_KEYS)
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_the_view_is_langgraphs_own_reading_of_the_bytes(value):
    type_, data = JsonPlusSerializer().dumps_typed(value)
    assert type_ == "msgpack"
    assert staff_view(type_, data) == langgraphs_own_view(type_, data)


def test_a_checkpoints_channel_values_read_as_people_wrote_them():
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": [HumanMessage("where is my parcel?", id="m1")], "steps": 3}
    type_, data = JsonPlusSerializer().dumps_typed(checkpoint)
    view = staff_view(type_, data)
    assert view["channel_values"]["steps"] == 3
    assert view["channel_values"]["messages"][0]["content"] == "where is my parcel?"


@pytest.mark.parametrize(
    "type_, data",
    [
        ("bytes", b"\x00\x01"),  # raw bytes: no JSON form
        ("pickle", b"\x80\x04K\x01."),  # pickles are never unpickled on the server
        ("msgpack", b"\xc1"),  # not msgpack
        ("msgpack", ormsgpack.packb(b"\x00binary")),  # bin values have no JSON form
        ("json", b"{not json"),
        ("msgpack+aes", b"\x00" * 16),  # an encrypting serializer: the server cannot read it
    ],
)
def test_values_without_a_json_form_have_no_view(type_, data):
    assert staff_view(type_, data) is None


@pytest.mark.django_db
def test_a_long_threads_state_is_stored_once_and_compressed_with_lz4_on_postgresql(postgres_only, tenant):
    from django.db import connection

    from backends.langgraph.process import services
    from backends.langgraph.process.models import LangGraphCheckpoint

    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": [f"A reply to question {i}, a short chat turn." for i in range(2_000)]}
    type_, data = JsonPlusSerializer().dumps_typed(checkpoint)
    services.checkpoint_put(
        tenant=tenant,
        thread_id="long",
        user_id="ada",
        default_user_id="nobody",
        checkpoint_ns="",
        checkpoint_id="c1",
        parent_checkpoint_id=None,
        checkpoint={"type": type_, "data": base64.b64encode(data).decode()},
        metadata={},
        channel_versions={},
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(value), octet_length(value), pg_column_size(value) "
            "FROM sessions_app_langgraphcheckpoint"
        )
        compression, length, stored = cursor.fetchone()
    assert (compression, length) == ("lz4", len(data)) and stored < length / 2
    assert (
        LangGraphCheckpoint.objects.get().rendered["messages"][1999] == "A reply to question 1999, a short chat turn."
    )
