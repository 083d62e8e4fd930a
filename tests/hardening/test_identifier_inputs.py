"""Identifiers are kept as typed on every staff and operator surface (issue 41, "Identifiers").

Walks every registered admin (add and change forms, inline forms, action forms, exact-id list
filters and the lookups a changelist takes from its query string), every form class the project
defines (a custom admin view's, a lifecycle step's) and every argument of this project's
management commands. Which inputs are identifiers follows from the models (``IdentifierField``)
and the map of people's data (the columns of the rows that carry a person), so a form or command
written later is covered the day it exists. Each such input given " alice ", "alice\\u00a0" or
spaces alone keeps it verbatim or refuses it with a message; it never becomes another id. Free-text
admin search splits on spaces by design and is left out (``ReadOnlyAdmin`` matches it whole).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest
from django import forms
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.core.exceptions import EmptyResultSet, FieldDoesNotExist, SuspiciousOperation, ValidationError
from django.core.management import get_commands, load_command_class
from django.core.management.base import CommandError
from django.db.models import ForeignKey, Model
from django.test import RequestFactory

from agentstate import subject_data
from agentstate.holds.services import legal_hold_place
from agentstate.identifiers import IdentifierArgument, IdentifierField, IdentifierFormField
from tests.userdata_app.erasure_factories import subject_data_create
from userdata_app.access_requests import access_request_create
from userdata_app.erasure import erasure_request_create

PROJECT = ("agentstate", "sessions_app", "userdata_app", "backends", "agentstate_site")
VALUES = [" alice ", "alice\u00a0", "   "]
QUICK = [VALUES[0]]  # the quick loop's one value; the others run in the slow set
ALL = [pytest.param(v, marks=() if v in QUICK else pytest.mark.crosscheck) for v in VALUES]


def variants(value: str) -> set[str]:
    """What a value becomes when stripped or normalised: never another id."""
    folded = unicodedata.normalize("NFKC", value)
    return {v for v in (value.strip(), folded, folded.strip(), value.lower(), "") if v != value}


# --- Which inputs are identifiers: the models and the map ----------------------------------------


def identifier_columns(model: type[Model]) -> dict[str, IdentifierField]:
    return {f.name: f for f in model._meta.fields if isinstance(f, IdentifierField)}


def identifier_names() -> set[str]:
    """The column that carries a person (the map finds a subject's rows by ``user_id``), the
    identifier columns of the map's roots and their stems (``user`` of ``user_id``): the names
    an input of a plain form or a command takes them under."""
    names = {"user_id"} | {name for d in subject_data.declared() for name in identifier_columns(d.root)}
    return names | {name.removesuffix("_id") for name in names if name.endswith("_id")}


def names_identifier(name: str | None) -> bool:
    words = identifier_names()
    name = (name or "").lower().replace("-", "_")
    return any(part in words or any(part.endswith("_" + w) for w in words) for part in re.split(r"[:,/ ]+", name))


def test_the_columns_that_carry_a_person_or_a_session_are_identifier_fields():
    """The map's roots name their person by ``user_id``, and the session by ``session_id``: both
    must be ``IdentifierField``, or every form for them would strip again."""
    roots = {d.root for d in subject_data.declared()}
    for root in roots:
        assert "user_id" in identifier_columns(root), f"{root._meta.label}.user_id is not an IdentifierField"
    sessions = {d.root for d in subject_data.declared() if d.via}
    assert all("session_id" in identifier_columns(s) for s in sessions)


# --- Forms ---------------------------------------------------------------------------------------


@pytest.fixture
def superuser(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw")


def staff_request(user, query: dict[str, str] | None = None):
    request = RequestFactory().get("/admin/", query or {})
    request.user = user
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    return request


def project_form_classes() -> Iterator[type[forms.BaseForm]]:
    """Every form class the project defines (custom admin views, lifecycle steps, actions)."""
    seen: set[type] = set()
    todo = list(forms.BaseForm.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in PROJECT:
            yield cls


def admin_forms(request) -> Iterator[tuple[str, type[forms.BaseForm]]]:
    """Every form an admin shows: add and change forms, inline forms, the action form."""
    for model, model_admin in admin.site._registry.items():
        where = model._meta.label
        yield f"{where} action form", model_admin.action_form
        for obj in (None, model._default_manager.first() or model()):  # the add page, then a change page
            change = obj is not None
            if not (
                model_admin.has_change_permission(request, obj) if change else model_admin.has_add_permission(request)
            ):
                continue  # a page nobody can submit (view-only records)
            yield f"{where} {'change' if change else 'add'} form", model_admin.get_form(request, obj, change=change)
            for inline in model_admin.get_inline_instances(request, obj):
                yield f"{where} inline {type(inline).__name__}", inline.get_formset(request, obj).form


def identifier_inputs(form: forms.BaseForm) -> list[str]:
    """The form's fields that take an identifier: the one form field, a model column of the
    identifier class, or a plain field named as the map names one."""
    model = getattr(getattr(form, "_meta", None), "model", None)
    columns = identifier_columns(model) if model else {}
    return [
        name
        for name, field in form.fields.items()
        if isinstance(field, IdentifierFormField) or name in columns or names_identifier(name)
    ]


@pytest.fixture
def records(tenant, superuser):
    """A row of each kind staff change: a person's data, a hold, an erasure and an access request."""
    subject_data_create(tenant=tenant, user_id="alice", sessions=1)
    legal_hold_place(tenant=tenant, user_id="alice", reference="CASE-1", reason="r")
    erasure_request_create(subjects=[(tenant, "alice")], requested_by="ticket 1")
    access_request_create(subjects=[(tenant, "alice")], requester="ticket 2")


@pytest.mark.parametrize("value", ALL)
def test_every_admin_and_project_form_keeps_an_identifier_as_typed(superuser, records, value):
    request = staff_request(superuser)
    surfaces = [*admin_forms(request), *((f"{c.__module__}.{c.__qualname__}", c) for c in project_form_classes())]
    checked, failures = [], []
    for where, cls in surfaces:
        for name in identifier_inputs(cls(data={})):
            form = cls(data={name: value})
            form.is_valid()
            checked.append(f"{where}.{name}")
            if name in form.errors:
                if not all(str(message).strip() for message in form.errors[name]):
                    failures.append(f"{where}.{name}: refused without a message")
                continue
            kept = form.cleaned_data.get(name)
            if kept != value:
                failures.append(f"{where}.{name}: {value!r} became {kept!r}")
            if not isinstance(form.fields[name], IdentifierFormField):
                failures.append(f"{where}.{name}: takes an identifier without IdentifierFormField")
    assert not failures, failures
    # The walk reached the forms that place holds, add request subjects and look a person up.
    assert {"holds.LegalHold add form.user_id", "holds.LegalHold add form.session_id"} <= set(checked)
    assert any(c.startswith("userdata_app.ErasureRequest inline") and c.endswith(".user_id") for c in checked)
    assert any(c.endswith("SubjectLookupForm.user_id") for c in checked)


# --- List filters and query-string lookups -------------------------------------------------------


def query_parameters(model_admin: admin.ModelAdmin, request) -> Iterator[str]:
    """The changelist's parameters that take an identifier: those of its list filters that name
    an identifier column (through a relation too) or take one by name, and the model's own
    identifier columns, which a changelist's query string may filter on directly."""
    changelist = model_admin.get_changelist_instance(request)
    for spec in changelist.filter_specs:
        for parameter in spec.expected_parameters():
            if names_identifier(parameter) or points_at_identifier(model_admin.model, parameter):
                yield parameter
    for name in identifier_columns(model_admin.model):
        yield name
    for field in model_admin.model._meta.fields:
        if isinstance(field, ForeignKey):
            for name in identifier_columns(field.related_model):
                yield f"{field.name}__{name}"


def points_at_identifier(model: type[Model], lookup: str) -> bool:
    for part in lookup.split("__"):
        try:
            field = model._meta.get_field(part)
        except FieldDoesNotExist:  # a lookup such as exact: not a column
            return False
        if isinstance(field, IdentifierField):
            return True
        if not field.is_relation:
            return False
        model = field.related_model
    return False


def applied(model_admin: admin.ModelAdmin, request) -> tuple[str, list[Any]]:
    """What the changelist asked the database, or why it refused."""
    try:
        changelist = model_admin.get_changelist_instance(request)
        return "ran", list(flatten(changelist.queryset.query.sql_with_params()[1]))
    except EmptyResultSet:
        return "nothing", []
    except (IncorrectLookupParameters, SuspiciousOperation, ValidationError, ValueError) as exc:
        return "refused", [str(exc)]


def flatten(params: Any) -> Iterator[Any]:
    for param in params:
        if isinstance(param, (list, tuple)):
            yield from flatten(param)
        else:
            yield param


@pytest.mark.parametrize("value", ALL)
def test_every_exact_id_filter_and_lookup_uses_an_identifier_as_typed(superuser, value):
    checked, failures = [], []
    for model, model_admin in admin.site._registry.items():
        if not model_admin.has_view_permission(staff_request(superuser)):
            continue
        for parameter in dict.fromkeys(query_parameters(model_admin, staff_request(superuser))):
            request = staff_request(superuser, {parameter: value})
            outcome, params = applied(model_admin, request)
            where = f"{model._meta.label}?{parameter}"
            checked.append(where)
            changed = [p for p in params if isinstance(p, str) and p in variants(value)]
            if outcome == "ran" and value not in params:
                failures.append(f"{where}: {value!r} was not used as typed (asked {changed or 'nothing'})")
            elif outcome == "nothing" and not list(get_messages(request)):
                failures.append(f"{where}: {value!r} matched nothing without saying why")
            elif changed and value not in params:
                failures.append(f"{where}: {value!r} became {changed}")
    assert not failures, failures
    assert "sessions_app.Session?user_id" in checked and "sessions_app.Message?session_id" in checked


# --- Management commands -------------------------------------------------------------------------


def project_commands() -> Iterator[tuple[str, Any]]:
    for name, app in sorted(get_commands().items()):
        if app.split(".")[0] in PROJECT:
            yield name, load_command_class(app, name)


def filled(action: Any) -> list[str]:
    """A placeholder for a required argument other than the one tested."""
    n = action.nargs if isinstance(action.nargs, int) else 0 if action.nargs in ("*", "?") else 1
    value = str(action.choices[0]) if action.choices else "1" if action.type in (int, float) else "x"
    return [*action.option_strings[:1], *[value] * n]


def takes_identifier(action: Any) -> bool:
    metavar = action.metavar if isinstance(action.metavar, str) else None
    return isinstance(action.type, IdentifierArgument) or names_identifier(action.dest) or names_identifier(metavar)


@pytest.mark.parametrize("value", ALL)
def test_every_command_argument_keeps_an_identifier_as_typed(value):
    checked, failures = [], []
    for name, command in project_commands():
        parser = command.create_parser("manage.py", name)
        for action in parser._actions:
            if not takes_identifier(action):
                continue
            where = f"{name} {'/'.join(action.option_strings) or action.dest}"
            checked.append(where)
            if not isinstance(action.type, IdentifierArgument):
                failures.append(f"{where}: takes an identifier without identifier_argument")
                continue
            split = action.type.split
            given = f"acme{split}{value}" if split else value
            others = [arg for a in parser._actions if a.required and a is not action for arg in filled(a)]
            positional = [] if action.option_strings else [given]
            option = [action.option_strings[0], given] if action.option_strings else []
            try:
                parsed = getattr(parser.parse_args([*option, *others, *positional]), action.dest)
            except CommandError as exc:
                if (action.option_strings or [action.metavar or action.dest])[0] not in str(exc):
                    failures.append(f"{where}: {value!r} refused without naming the argument: {exc}")
                continue
            parsed = parsed[0] if isinstance(parsed, list) else parsed
            kept = parsed[1] if split else parsed
            if kept != value:
                failures.append(f"{where}: {value!r} became {kept!r}")
    assert not failures, failures
    assert {"erase_user --subject", "export_user --subject", "import_sessions --default-user"} <= set(checked)
