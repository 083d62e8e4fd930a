"""``validated`` skips DRF's field machinery for a body that plainly passes: for every input whose
fields allow it, each field changed one value at a time from a good body gets exactly DRF's answer
(the same validated values, or the same 400)."""

from typing import Any

import pytest
from django.http import QueryDict
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

import agentstate_site.urls  # noqa: F401 (every app's views, and so their inputs, imported)
from agentstate.api import serializers as api_serializers
from agentstate.api.serializers import PassedOn, StrictInput, StringField, validated
from agentstate.exceptions import DomainError
from backends.langgraph.views import CheckpointBatchInput, CheckpointPutInput, CheckpointQuery, WritesPutInput
from sessions_app.api.serializers import MessagePopInput, MessageQuery


def _inputs(cls: type = StrictInput) -> list[type[StrictInput]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_inputs(sub)]
    return found


PLAIN = sorted({c for c in _inputs() if api_serializers._plan(c) is not None}, key=lambda c: c.__qualname__)


def _good(field: serializers.Field) -> Any:
    if isinstance(field, serializers.ListField):
        return [_good_body(field.child)]
    if isinstance(field, serializers.ChoiceField):
        return next(iter(field.choice_strings_to_values.values()))
    if isinstance(field, serializers.BooleanField):
        return True
    if isinstance(field, serializers.IntegerField):
        return 1 if field.min_value is None else field.min_value
    if isinstance(field, StringField):
        return "x"
    return {"a": [1, "b"]}


def _good_body(serializer: serializers.Serializer) -> dict[str, Any]:
    return {name: _good(field) for name, field in serializer.fields.items()}


def _odd_lists(field: serializers.Field) -> list[Any]:
    """For a list of inputs: items missing, null, of another shape, too many, and one changed."""
    if not isinstance(field, serializers.ListField):
        return []
    good = _good_body(field.child)
    many = [good] * ((field.max_length or 3) + 1)
    changed = [[{**good, name: odd} for odd in ODD] for name in good]
    return [[], [None], [good, "x"], [{**good, "unknown": 1}], many, *[[item] for c in changed for item in c]]


ODD = ["", " x ", "a\x00b", "\ud800", "é", 7, -1, 2**63, 1.5, True, None, {}, [], {"k": b"bytes"}, b"raw", "on", "1"]


def _drf(cls: type[serializers.Serializer], data: dict[str, Any]) -> Any:
    serializer = cls(data=data)
    try:
        return dict(serializer.validated_data) if serializer.is_valid() else serializer.errors
    except DomainError as exc:  # a hook's own refusal (a search's cursor)
        return type(exc), str(exc)


def _answer(cls: type[serializers.Serializer], data: dict[str, Any]) -> Any:
    try:
        return dict(validated(cls, data))
    except ValidationError as exc:
        return exc.detail
    except DomainError as exc:
        return type(exc), str(exc)


def test_the_hot_writes_take_the_plain_path():
    assert {CheckpointPutInput, WritesPutInput, CheckpointBatchInput, MessagePopInput} <= set(PLAIN)


@pytest.mark.parametrize("cls", PLAIN, ids=lambda c: c.__qualname__)
def test_each_field_changed_gets_drfs_answer(cls):
    fields = cls().fields
    good = _good_body(cls())
    bodies = [good, {**good, "unknown": 1}, {name: value for name, value in good.items() if fields[name].required}]
    for name in fields:
        bodies += [{**good, name: odd} for odd in ODD + _odd_lists(fields[name])]
        bodies.append({key: value for key, value in good.items() if key != name})
    for body in bodies:
        assert _answer(cls, body) == _drf(cls, body), body


def test_a_passed_on_value_is_the_one_sent():
    value = {"type": "msgpack", "data": b"\x01"}
    assert isinstance(CheckpointPutInput().fields["checkpoint"], PassedOn)
    body = {
        "thread_id": "t",
        "default_user_id": "u",
        "checkpoint_ns": "",
        "checkpoint_id": "c",
        "checkpoint": value,
        "metadata": {},
        "channel_versions": {},
    }
    assert validated(CheckpointPutInput, body)["checkpoint"] is value


def _serializers(cls: type = serializers.Serializer) -> list[type[serializers.Serializer]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_serializers(sub)]
    return found


QUERY_PLAIN = sorted(
    {c for c in _serializers() if c.__name__.endswith("Query") and api_serializers._query_plan(c) is not None},
    key=lambda c: c.__qualname__,
)
ODD_TEXT = ["", " 7", "7 ", "7.0", "0020", "-1", "+1", "1e3", "\uff11", "\u00b2", str(2**63), "9" * 1001]
ODD_TEXT += ["x", " x ", "a\x00b", "\ud800", "é", "on"]


def _query(params: dict[str, Any], repeated: tuple[str, list[str]] | None = None) -> QueryDict:
    query = QueryDict(mutable=True)
    for name, value in params.items():
        query[name] = value
    if repeated is not None:
        query.setlist(*repeated)
    return query


def test_the_history_read_takes_the_query_plain_path():
    assert MessageQuery in QUERY_PLAIN


def test_langgraphs_get_tuple_takes_the_query_plain_path():
    """A required parameter, defaults and a choice: LangGraph's runner starts every run with this read."""
    assert CheckpointQuery in QUERY_PLAIN


def _good_text(field: serializers.Field) -> str:
    if isinstance(field, serializers.ChoiceField):
        return next(iter(field.choice_strings_to_values))
    return "x" if isinstance(field, serializers.CharField) else str(getattr(field, "min_value", None) or 1)


@pytest.mark.parametrize("cls", QUERY_PLAIN, ids=lambda c: c.__qualname__)
def test_each_parameter_changed_gets_drfs_answer(cls):
    """A query string's parameters are text (the last value of a repeated one counts): each changed
    one at a time, alone and beside the others, and repeated either way round, gets exactly DRF's
    answer."""
    fields = cls().fields
    good = {name: _good_text(field) for name, field in fields.items()}
    queries = [_query(good), _query({**good, "unknown": "1"}), _query({})]
    for name in fields:
        queries.append(_query({key: value for key, value in good.items() if key != name}))
        for odd in ODD_TEXT:
            queries += [_query({**good, name: odd}), _query({name: odd})]
            queries += [_query({}, (name, [odd, good[name]])), _query({}, (name, [good[name], odd]))]
    for query in queries:
        assert _answer(cls, query) == _drf(cls, query), query
