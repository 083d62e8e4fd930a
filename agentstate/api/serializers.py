"""Serializer plumbing shared by the apps' APIs."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from functools import cache, cached_property, partial
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, ProhibitNullCharactersValidator
from django.http import QueryDict
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from agentstate.exceptions import InvalidInput
from agentstate.validation import parse_json_text


class StrictInput(serializers.Serializer):
    """A request body: a JSON object with only the declared fields (a typo is a 400, not a
    silently ignored field). It checks types and shape only; services check the rules."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


class StringField(serializers.CharField):
    """An input field that takes a JSON string only, exactly as sent: DRF's CharField turns 123
    into "123" and true into "True", and trims whitespace, so a client's wrong type or an id ending
    in a no-break space would be stored under another identifier (another person), not refused."""

    default_error_messages = {"invalid": "Must be a string."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


JSON_TEXT_FORMAT = "json"  # the schema's mark on a string that carries JSON text


@extend_schema_field({"type": "string", "format": JSON_TEXT_FORMAT})
class JSONTextField(StringField):
    """A JSON object sent as a string (ADK's state and events, LangGraph's filter), parsed by the
    rules of a JSON body (``parse_json_text``); the validated value is the object. The schema marks
    it ``format: json`` so that clients, and the tests of every JSON field, can find it."""

    default_error_messages = {"invalid": "Must be a string of JSON text.", "not_object": "Must be a JSON object."}

    def to_internal_value(self, data: Any) -> Any:  # a dict, where the string field it extends has a str
        text = super().to_internal_value(data)
        field = cast(str, self.field_name)  # set when the field is bound, before any validation
        try:
            value = parse_json_text(text, field=field)
        except InvalidInput as exc:
            raise serializers.ValidationError(exc.fields[field]) from None
        if not isinstance(value, dict):
            self.fail("not_object")
        return value


@extend_schema_field({"type": "object"})
class PassedOn(serializers.Field):
    """A value the service checks itself (its messages name the part at fault), taken as sent: e.g.
    typed values whose data is bytes in msgpack, base64 in JSON, which DRF's JSONField cannot hold."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """``data`` checked by ``serializer_class``; a 400 naming the fields otherwise. A body
    (``_plainly_valid``) or a query string (``_query_plan``) that plainly passes skips DRF's field
    machinery; any other goes through DRF, which gives the answer, so a refusal is worded as DRF
    words it."""
    if type(data) is dict:  # not a QueryDict: DRF reads form and query input its own way
        plan = _plan(serializer_class)
        if plan is not None:
            try:
                return _plainly_valid(plan, data)
            except _NotPlain:
                pass
    elif isinstance(data, QueryDict):
        query_plan = _query_plan(serializer_class)
        if query_plan is not None:
            try:
                return query_plan(data)
            except _NotPlain:
                pass
    serializer = serializer_class(data=data)
    serializer.__dict__["fields"] = _input_fields(serializer_class)  # DRF's ``fields`` is a cached_property
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


@cache
def _input_fields(serializer_class: type[serializers.Serializer]) -> Any:
    """The class's fields, copied and bound once: DRF deep-copies every declared field for every
    serializer it builds (two thirds of a validation's time). Input fields keep no state of a
    validation (values and errors travel as return values and exceptions, and no input serializer
    here reads its context or instance), so every request's serializer can share them."""
    return serializer_class().fields


class _NotPlain(Exception):
    """DRF must look at this body: it may refuse it, or turn a value into another."""


_STRING_CHECKS = (ProhibitNullCharactersValidator, ProhibitSurrogateCharactersValidator)
# name, check (the value sent -> the value validated, or _NotPlain), required, default, allow_null
_Step = tuple[str, Callable[[Any], Any], bool, Any, bool]


@cache
def _plan(serializer_class: type[serializers.Serializer]) -> tuple[_Step, ...] | None:
    """How to check a ``StrictInput`` without DRF: a step per field, each as DRF would accept a
    value (strings, JSON, booleans, choices, values passed on, lists of such inputs); None when
    any field, validator or ``validate`` is of another kind (DRF checks every body then)."""
    own_validate = serializer_class.validate is not serializers.Serializer.validate
    if not issubclass(serializer_class, StrictInput) or own_validate:
        return None
    checked = _checked_fields(serializer_class, _value_check)
    if checked is None or any(getattr(field.default, "requires_context", False) for field, _ in checked[1].values()):
        return None
    return tuple(
        (name, check, field.required, field.default, field.allow_null) for name, (field, check) in checked[1].items()
    )


def _checked_fields(
    serializer_class: type[serializers.Serializer], value_check: Callable[[serializers.Field], Any]
) -> tuple[serializers.Serializer, dict[str, tuple[serializers.Field, Callable[[Any], Any]]]] | None:
    """The class's one shared instance, and each input field with its value's check (``value_check``
    of the field, then its ``validate_<field>`` hook); None when the class has validators of its
    own, or a field no plain check, is read only or reads another name. The hooks and the class's
    ``validate`` run on the shared instance: as the shared fields, they must keep no state and read
    neither ``context`` nor ``initial_data``."""
    owner = serializer_class()
    if owner.get_validators():
        return None
    fields = {}
    for name, field in _input_fields(serializer_class).items():
        check = value_check(field)
        if check is None or field.read_only or field.source != name:
            return None
        hook = getattr(owner, f"validate_{name}", None)
        fields[name] = (field, check if hook is None else _then(check, hook))
    return owner, fields


def _then(check: Callable[[Any], Any], hook: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def checked(value: Any) -> Any:
        try:
            return hook(check(value))
        except (serializers.ValidationError, DjangoValidationError):  # DRF's answer is the refusal
            raise _NotPlain() from None

    return checked


def _value_check(field: serializers.Field) -> Callable[[Any], Any] | None:
    """A value's check by ``field``'s rule, for the kinds of field DRF's own rule is plain for."""
    kind = type(field)
    if isinstance(field, StringField) and kind is StringField:
        plain = not field.trim_whitespace and field.max_length is field.min_length is None
        if not plain or [type(v) for v in field.validators] != list(_STRING_CHECKS):
            return None
        return functools.partial(_plain_string, blank=field.allow_blank)
    if isinstance(field, serializers.ListField) and kind is serializers.ListField:
        return _list_check(field)
    if isinstance(field, serializers.IntegerField) and kind is serializers.IntegerField:
        return _int_check(field)
    if field.validators:
        return None
    if isinstance(field, serializers.JSONField) and kind is serializers.JSONField:
        return _plain_json if not field.binary and field.encoder is None else None
    if kind is serializers.BooleanField:
        return _plain_bool
    if isinstance(field, serializers.ChoiceField) and kind is serializers.ChoiceField:
        return functools.partial(_plain_choice, choices=field.choice_strings_to_values)
    if issubclass(kind, PassedOn) and kind.to_internal_value is PassedOn.to_internal_value:
        return _passed_on
    return None


def _int_check(field: serializers.IntegerField) -> Callable[[Any], Any] | None:
    """An integer within the field's bounds (DRF's own check of one; a string of digits, which DRF
    takes too, goes to DRF)."""
    bounds = {
        type(validator): validator.limit_value
        for validator in field.validators
        if isinstance(validator, MinValueValidator | MaxValueValidator) and not callable(validator.limit_value)
    }
    if len(bounds) != len(field.validators):
        return None
    return functools.partial(_plain_int, low=bounds.get(MinValueValidator), high=bounds.get(MaxValueValidator))


@cache
def _query_plan(serializer_class: type[serializers.Serializer]) -> Callable[[QueryDict], dict[str, Any]] | None:
    """How to check a query string without DRF, as DRF checks one (each parameter's last value; a
    parameter that is no field ignored; a field absent refused when required, else its default if
    it has one): integers as ASCII digits within the field's bounds, text with nothing to trim, one
    of a choice's strings, then the class's ``validate``. None when a field is of another kind or
    its default needs context, or the class refuses unknown parameters (``StrictInput``)."""
    checked = None if issubclass(serializer_class, StrictInput) else _checked_fields(serializer_class, _query_check)
    if checked is None:
        return None
    owner, fields = checked
    defaults = [(name, field.default) for name, (field, _) in fields.items() if field.default is not serializers.empty]
    # DRF runs a field's hook on its default too, and a default needing context is not a value.
    if any(
        getattr(default, "requires_context", False) or hasattr(owner, f"validate_{name}") for name, default in defaults
    ):
        return None
    own_validate = serializer_class.validate is not serializers.Serializer.validate
    steps = tuple((name, check, field.required, field.default) for name, (field, check) in fields.items())
    return partial(_plain_query, steps=steps, validate=_then(dict, owner.validate) if own_validate else dict)


def _query_check(field: serializers.Field) -> Callable[[Any], Any] | None:
    kind = type(field)
    if kind is serializers.IntegerField:
        check = _int_check(cast(serializers.IntegerField, field))
        return None if check is None else partial(_plain_digits, check=check)
    if isinstance(field, serializers.CharField) and kind in (serializers.CharField, StringField):
        plain = field.max_length is field.min_length is None
        if not plain or [type(v) for v in field.validators] != list(_STRING_CHECKS):
            return None
        return partial(_plain_text, trimmed=field.trim_whitespace, blank=field.allow_blank)
    if kind is serializers.ChoiceField and not field.validators:
        choice = cast(serializers.ChoiceField, field)
        # A blank one DRF reads as absent, or as blank or null: DRF's own reading.
        return None if choice.allow_blank else partial(_plain_choice, choices=choice.choice_strings_to_values)
    return None


def _plain_query(
    data: QueryDict, *, steps: tuple[tuple[str, Callable[[Any], Any], bool, Any], ...], validate: Any
) -> Any:
    validated: dict[str, Any] = {}
    for name, check, required, default in steps:
        if name in data:
            validated[name] = check(data[name])
        elif required:
            raise _NotPlain()  # DRF words the refusal
        elif default is not serializers.empty:
            validated[name] = default() if callable(default) else default
    return validate(validated)


def _plain_digits(value: Any, *, check: Callable[[Any], int]) -> int:
    if type(value) is not str or not value.isascii() or not value.isdigit() or len(value) > 1000:
        raise _NotPlain()  # DRF takes " 7", "7.0" and more, and words a refusal its own way
    return check(int(value))


def _plain_text(value: Any, *, trimmed: bool, blank: bool) -> str:
    if trimmed and type(value) is str and value != value.strip():
        raise _NotPlain()
    return _plain_string(value, blank=blank)


def _plain_int(value: Any, *, low: Any, high: Any) -> int:
    if type(value) is not int or (low is not None and value < low) or (high is not None and value > high):
        raise _NotPlain()
    return value


def _list_check(field: serializers.ListField) -> Callable[[Any], Any] | None:
    """A list of inputs, each checked by its own plan, within the list's bounds."""
    child, bounds = field.child, (field.min_length, field.max_length)
    plan = _plan(type(child)) if isinstance(child, StrictInput) and not child.allow_null else None
    if plan is None or len(field.validators) != sum(bound is not None for bound in bounds):
        return None
    return functools.partial(_plain_list, plan=plan, bounds=bounds, empty=field.allow_empty)


def _plain_list(value: Any, *, plan: tuple[_Step, ...], bounds: tuple[int | None, int | None], empty: bool) -> list:
    low, high = bounds
    if type(value) is not list or (not value and not empty) or (low is not None and len(value) < low):
        raise _NotPlain()
    if high is not None and len(value) > high:
        raise _NotPlain()
    return [_plainly_valid(plan, item) if type(item) is dict else _not_plain() for item in value]


def _not_plain() -> Any:
    raise _NotPlain()


def _plain_string(value: Any, *, blank: bool) -> str:
    if type(value) is not str or (not value and not blank) or "\x00" in value:
        raise _NotPlain()
    if not value.isascii():
        try:
            value.encode("utf-8")  # a lone surrogate cannot be
        except UnicodeEncodeError:
            raise _NotPlain() from None
    return value


def _plain_json(value: Any) -> Any:
    try:
        json.dumps(value)  # DRF's own test of a JSON field's value
    except (TypeError, ValueError):
        raise _NotPlain() from None
    return value


def _plain_bool(value: Any) -> bool:
    if type(value) is not bool:
        raise _NotPlain()
    return value


def _plain_choice(value: Any, *, choices: dict[str, Any]) -> Any:
    if type(value) is not str or value not in choices:
        raise _NotPlain()
    return choices[value]


def _passed_on(value: Any) -> Any:
    return value


def _plainly_valid(plan: tuple[_Step, ...], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as DRF validates it, or ``_NotPlain``: every key a field, every field there or
    with a default, no null where none is allowed, each value plainly fine."""
    if len(data) > len(plan):
        raise _NotPlain()
    validated: dict[str, Any] = {}
    seen = 0
    for name, check, required, default, allow_null in plan:
        if name not in data:
            if required:
                raise _NotPlain()
            if default is not serializers.empty:
                validated[name] = default() if callable(default) else default
            continue
        seen += 1
        value = data[name]
        if value is None:
            if not allow_null:
                raise _NotPlain()
            validated[name] = None
        else:
            validated[name] = check(value)
    if seen != len(data):  # a key that is no field: StrictInput's 400
        raise _NotPlain()
    return validated


class Output(serializers.Serializer):
    """A response shape. Fields are declared for the schema; values are read straight off the
    object (model fields already hold JSON types), only datetimes and nested shapes are converted:
    a page of 500 messages costs a fraction of DRF's field-by-field path."""

    @cached_property
    def _plan(self) -> Plan:
        """(key, source, converter or None) per field: looked up once per serializer, not per row,
        and worked out once per class and time zone, not per request (DRF deep-copies the declared
        fields for every serializer it builds)."""
        zone = timezone.get_current_timezone() if settings.USE_TZ else None
        plan = _PLANS.get((type(self), zone))
        if plan is None:
            plan = _PLANS[type(self), zone] = type(self)()._work_out_plan(zone)
        return plan

    def _work_out_plan(self, zone) -> Plan:
        """A datetime field's zone is set here (DRF looks up the current time zone for every value it
        converts, which cost more than the conversion). The fields are this throwaway instance's
        own, shared by every later serializer of the class: converters keep no per-request state."""
        plan: Plan = []
        for field in self._readable_fields:
            if isinstance(field, serializers.DateTimeField) and not hasattr(field, "timezone") and zone is not None:
                field.timezone = zone  # without USE_TZ DRF leaves datetimes as they are
            converter = field if isinstance(field, _CONVERTED) else None
            plan.append((cast(str, field.field_name), cast(str, field.source), converter))
        return plan

    def to_representation(self, instance: Any) -> dict[str, Any]:
        read = instance.__getitem__ if isinstance(instance, Mapping) else partial(getattr, instance)
        data = {}
        for key, source, converter in self._plan:
            value = read(source)
            if value is not None and converter is not None:
                value = converter.to_representation(value)
            data[key] = value
        return data


_CONVERTED = (serializers.DateTimeField, serializers.BaseSerializer)
Plan = list[tuple[str, str, serializers.Field | None]]
_PLANS: dict[tuple[type[Output], Any], Plan] = {}
