"""Each input rule once, against the whole table of edge and Unicode values: plain calls, no
request. That every field of every endpoint reaches its rule is test_input_rules.py's part."""

from __future__ import annotations

import base64
import io
import json
import math
from datetime import UTC, datetime

import pytest
from django.test import RequestFactory, override_settings
from rest_framework import exceptions
from rest_framework.request import Request

from agentstate.api.pagination import (
    CursorPagination,
    InsertionPagination,
    KeyPagination,
    RoundPagination,
    SeqPagination,
    SessionPagination,
)
from agentstate.api.parsers import JSONParser
from agentstate.api.serializers import JSONTextField
from agentstate.api.views import RAW_PATH_KEY, _path_is_utf8
from agentstate.exceptions import InvalidInput
from agentstate.validation import (
    IDENTIFIER_MAX_LENGTH,
    MAX_BODY_DEPTH,
    MAX_JSON_DEPTH,
    ROUND_ID_MAX,
    check_json_text_depth,
    clean_datetime,
    clean_identifier,
    clean_json,
    clean_optional_label,
    clean_round_id,
    clean_timestamp,
    parse_json_text,
)
from backends.langgraph.process.services import MAX_ID_BYTES, clean_text
from tests.hardening.edge_values import EXTREME_BUT_VALID, EXTREME_IN_UTC, forged

REFUSED = "refused"


def judged(rule, value):
    """What ``rule`` makes of ``value``: its result, or ``REFUSED``."""
    try:
        return rule(value)
    except (InvalidInput, exceptions.ValidationError, exceptions.ParseError):
        return REFUSED


def assert_table(rule, table) -> None:
    """``table`` is ``(value, expected)`` pairs; every mismatch is reported at once."""
    wrong = [(ascii(value)[:80], expected, judged(rule, value)) for value, expected in table]
    wrong = [(value, expected, got) for value, expected, got in wrong if got != expected]
    assert not wrong, "\n".join(f"{value}: expected {ascii(e)[:60]}, got {ascii(g)[:60]}" for value, e, g in wrong)


def kept(*values):
    return [(value, value) for value in values]


def refused(*values):
    return [(value, REFUSED) for value in values]


# Unicode a reader could miss, stored exactly as sent (never stripped or normalised).
INVISIBLE_OR_UNUSUAL = [
    "\u00a0a\u00a0",  # no-break spaces
    "a\u200b",  # zero-width space
    "\u200fa\u200e",  # right-to-left and left-to-right marks
    "\u202eevil",  # right-to-left override
    "\ufeffa",  # byte-order mark
    "\u1680a\u3000",  # ogham and ideographic spaces
    " a ",
    "a b",
    "e\u0301",  # e and a combining accent, not é
    "😀",
    "用户",
    "%ED",
    "⟦U+00A0⟧",
]
CONTROL_CHARACTERS = ["a\x00b", "a\tb", "a\nb", "\x7f", "a\x85b", "\x1b[31m"]
LONE_SURROGATES = ["\ud800", "ok\udfff", "\udc80tail"]
IDENTIFIER_TABLE = [
    *kept("x" * IDENTIFIER_MAX_LENGTH, "é" * IDENTIFIER_MAX_LENGTH, "a", *INVISIBLE_OR_UNUSUAL),
    *refused("", "x" * (IDENTIFIER_MAX_LENGTH + 1), "a/b", "/", *CONTROL_CHARACTERS, *LONE_SURROGATES),
    *refused(1, 1.5, True, None, ["a"], {"a": 1}, b"a"),
]


def test_identifiers():
    assert_table(lambda value: clean_identifier(value, field="user_id"), IDENTIFIER_TABLE)


def test_optional_labels_are_identifiers_or_blank():
    table = [(value, expected) for value, expected in IDENTIFIER_TABLE if value not in ("", None)]
    assert_table(lambda value: clean_optional_label(value, field="agent_id"), [*table, ("", ""), (None, "")])


def test_langgraph_ids_are_any_text_a_database_holds():
    """LangGraph's ids are the client's mapping of any string: only what no database stores is refused."""
    table = [
        *kept("", "a/b", "a\tb", "\x7f", "x" * 255, "é" * 127, *INVISIBLE_OR_UNUSUAL),
        *refused("a\x00b", *LONE_SURROGATES, "x" * 256, "é" * 128, 1, None),
    ]
    assert_table(lambda value: clean_text(value, field="checkpoint_id", max_bytes=MAX_ID_BYTES), table)
    assert_table(lambda value: clean_text(value, field="thread_id", allow_empty=False), refused(""))


def nested(levels: int, leaf: str = "{}") -> str:
    return '{"d":' * levels + leaf + "}" * levels


def deep(levels: int) -> dict:
    return json.loads(nested(levels))


def test_json_documents():
    table = [
        *kept(1.5e308, -0.0, 10**400, 0, True, None, "", [], {}, deep(MAX_JSON_DEPTH)),
        *kept({"\u00a0k\u2003": " v ", "\u202e": ["\u200b", "😀"]}, ["\\u0000", "\\ud800"]),
        *refused(math.nan, math.inf, -math.inf, float("1e400"), {"a": [math.nan]}, deep(MAX_JSON_DEPTH + 1)),
        *refused("a\x00b", {"k\x00": 1}, [["\x00"]], {1: 2}, {None: 1}, object(), b"a", {1.5}),
        *refused(*LONE_SURROGATES, {"\ud800": 1}, {"k": ["ok\udfff"]}),
    ]
    assert_table(lambda value: clean_json(value, field="metadata"), table)
    binary = [*kept(b"a", {"k": [b"\x00", 1]}), *refused("a\x00b", {1: b""}, {"k": bytearray(b"a")})]
    assert_table(lambda value: clean_json(value, field="body", binary=True), binary)  # a msgpack body's bytes
    objects = [({}, {}), ({"a": 1}, {"a": 1}), *refused([], "a", 1, None)]
    assert_table(lambda value: clean_json(value, field="state", require_object=True), objects)


def parsed(*texts):
    return [(text, json.loads(text)) for text in texts]


JSON_TEXT_TABLE = [
    *parsed('{"a": 1.5e308, "b": -0.0, "c": 1' + "0" * 400 + "}", nested(MAX_BODY_DEPTH - 1), "[]", '"\u00a0"'),
    *parsed('"a\\u0000b"'),  # NUL: left to the caller (ADK's text keeps it)
    *parsed('["\\ud83d\\ude00", "\\\\ud800"]'),  # a surrogate pair, an escaped backslash before "ud800"
    *refused("NaN", "-NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1E+999", "[1e400]", '{"x": NaN}'),
    *refused(nested(MAX_BODY_DEPTH + 1), "[" * 3000 + "]" * 3000, "[" * 3000),
    *refused('{"x": "\\ud800"}', '{"\\udc00": 1}', '["a\\ud83d"]', '{"x": "\ud800"}'),
    *refused("{", "", "{'a': 1}", "\u00a0{}", '{"a": 1,}'),
]


def test_json_text():
    assert_table(lambda text: parse_json_text(text, field="state"), JSON_TEXT_TABLE)


def test_json_text_fields_take_an_object_in_a_string():
    """The serializer field around ``parse_json_text``: a string, holding an object."""
    field = JSONTextField()
    field.bind("state", None)
    objects = [(text, value) for text, value in JSON_TEXT_TABLE if isinstance(value, dict) or value == REFUSED]
    assert_table(field.run_validation, [*objects, *refused("[]", '"a"', "1", 1, None, {"a": 1}, ["{}"])])


def levels(count: int, inner: str = "") -> str:
    return "[" * count + inner + "]" * count


# Bodies that reached a 500 before (issue 9, defect 6): the JSON parser recursed until Python's
# stack ran out (a RecursionError near 950 levels, in under 2 KB).
TOO_DEEP_BODIES = [
    levels(950),
    '{"state": ' + levels(200, "1") + "}",
    '{"messages": [{"content": "x", "metadata": {"a": ' + levels(100) + "}}]}",
    "[" * 5000,  # never closed
    '["' + "]" * 40 + '", ' + levels(70) + "]",  # brackets inside strings hide nothing
    "{" * (MAX_BODY_DEPTH + 1),
]
WITHIN_THE_BODY_DEPTH = [
    levels(MAX_BODY_DEPTH),
    json.dumps({"text": "[" * 100 + '\\"' + "{" * 100}),  # brackets and an escaped quote in a string
    json.dumps(["]" * 100, "[" * 100, "\\", '"']),
    '""' + levels(MAX_BODY_DEPTH),
    "",
    "not json at all",  # the parser's to refuse, not this check's
]


def test_json_text_depth_before_parsing():
    def depth(text: str):
        check_json_text_depth(text.encode(), field="body")
        return "within"

    assert_table(depth, [*refused(*TOO_DEEP_BODIES), *((text, "within") for text in WITHIN_THE_BODY_DEPTH)])


def test_the_json_body_parser():
    def parse(raw: str):
        return JSONParser().parse(io.BytesIO(raw.encode("utf-8", "surrogatepass")), "application/json", {})

    table = [
        *parsed('{"a": 1}', "[]", '{"\u00a0": "\u202e"}', levels(MAX_BODY_DEPTH)),
        *refused("{bad json", '{"a": 1,}', "", "[", '{"a": NaN}', '{"a": Infinity}', *TOO_DEEP_BODIES),
        *refused(b"\xff".decode("latin-1")),
    ]
    assert_table(parse, table)
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10), pytest.raises(exceptions.APIException) as raised:
        parse('{"a": "' + "x" * 10 + '"}')
    assert raised.value.status_code == 413


def test_round_ids():
    table = [
        *kept(0, 1, ROUND_ID_MAX),
        *refused(-1, ROUND_ID_MAX + 1, 10**30, 1.5, 1e100, math.nan, "1", "x", True, False, None, [1], {}),
    ]
    assert_table(clean_round_id, table)


def test_timestamps():
    table = [
        *kept(0, 1_700_000_000.5, -1.5, 253402300799.0, -62135596800),
        *refused(1e300, -1e18, math.nan, math.inf, -math.inf, 253402300800, -62135596801, 10**400),
        *refused(True, "1", None, [1]),
    ]
    assert_table(lambda value: clean_timestamp(value, field="event.timestamp"), table)


def test_datetimes_in_queries_are_read_in_utc_or_refused():
    """As the session list reads its filters: the form parses, ``clean_datetime`` converts."""
    from sessions_app.api.filters import SessionFilter

    def read(text: str):
        form = SessionFilter(data={"created_after": text}).form
        if not form.is_valid():
            return REFUSED
        converted = clean_datetime(form.cleaned_data["created_after"], field="created_after")
        assert converted.utcoffset().total_seconds() == 0
        return converted

    unparsable = [
        "2026-01-01T00:00:00+24:00",
        "2026-01-01T00:00:00-99:00",
        "10000-01-01T00:00:00Z",
        "0000-12-31T00:00:00Z",
    ]
    table = [(text, in_utc(text)) for text in EXTREME_BUT_VALID]
    assert_table(read, [*table, *refused(*EXTREME_IN_UTC, *unparsable, "not a time", "2026-02-30T00:00:00Z")])


def in_utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


GARBLED_CURSORS = [
    "AAAA",  # decodes to nothing: no position, offset or direction
    "!!!",
    "%00",
    "not base64!",
    "%%%",
    "=" * 8,
    base64.b64encode(b"\xff\xfe").decode(),
    base64.b64encode(b"p=1&o=-5").decode(),
    forged("x\x00y"),
    forged("1", r="maybe"),
]
INTEGER_POSITIONS_OUT_OF_RANGE = [forged("9" * 40), forged("-" + "9" * 30), forged("1" * 5000)]


def decoded(pagination: type[CursorPagination], model):
    def decode(cursor: str):
        paginator = pagination()
        paginator._model = model
        found = paginator.decode_cursor(Request(RequestFactory().get("/", {"cursor": cursor})))
        return found and (found.position, found.reverse, found.offset)

    return decode


def test_cursors_name_a_position_of_the_ordering_field():
    from sessions_app.models import Checkpoint, Message, Round, Session
    from userdata_app.models import UserDatum

    anywhere = [("", None), *refused(*GARBLED_CURSORS)]
    datetimes = [
        *((forged(text), (in_utc(text).isoformat(), False, 0)) for text in EXTREME_BUT_VALID),
        *refused(*(forged(text) for text in [*EXTREME_IN_UTC, "not a time", "2026-02-30T00:00:00Z"])),
        *refused(forged("2026-01-01T00:00:00+24:00"), forged("9" * 40), forged("-" + "9" * 30)),
    ]
    assert_table(decoded(SessionPagination, Session), [*anywhere, *datetimes])
    integers = [(forged("7", r="1"), ("7", True, 0)), (forged("-3"), ("-3", False, 0))]
    integers.append((forged("1", o="9" * 20), ("1", False, 1000)))  # an offset past DRF's cap: capped
    for pagination, model in [(SeqPagination, Message), (RoundPagination, Round), (InsertionPagination, Checkpoint)]:
        assert_table(decoded(pagination, model), [*anywhere, *integers, *refused(*INTEGER_POSITIONS_OUT_OF_RANGE)])
    keys = [(forged(text), (text, False, 0)) for text in ["email", "9" * 40, "\u00a0\u202e"]]
    assert_table(decoded(KeyPagination, UserDatum), [*anywhere, *keys])


def test_page_sizes():
    def size(pagination: type[CursorPagination]):
        return lambda raw: pagination().get_page_size(Request(RequestFactory().get("/", {"page_size": raw})))

    never = refused("0", "-1", "abc", "1.5", "", "1e3", "9" * 5000)
    assert_table(size(RoundPagination), [("1", 1), ("500", 500), *refused("501"), *never])
    assert_table(size(SeqPagination), [("2000", 2000), *refused("2001"), *never])


def test_paths_are_percent_encoded_utf8():
    def utf8(raw: bytes):
        request = RequestFactory().get("/")
        request.META[RAW_PATH_KEY] = raw
        return _path_is_utf8(request)

    table = [
        (b"/api/v1/users/u1/", True),
        (b"/api/v1/users/%ED%A0%80/", True),  # still escaped: a user id spelled with percent signs
        ("/api/v1/users/é/".encode(), True),
        ("/api/v1/users/😀\u00a0/".encode(), True),
        (b"/api/v1/users/\xed\xa0\x80/", False),  # a surrogate's bytes
        (b"/api/v1/users/\xff/", False),
        (b"/api/v1/users/\xc3/", False),  # cut short
    ]
    assert_table(utf8, table)
