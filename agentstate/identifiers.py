"""Identifiers as staff and operators type them: the one form field and the one command-argument type.

A person's id, a session's id and the other identifier columns (keys, labels, app names) are kept
exactly as typed, like the API keeps them (``agentstate.validation``): never stripped or
normalised, an empty value stays empty, anything else is checked by ``clean_identifier`` and
refused with its message. Django's form ``CharField`` strips edge whitespace by default, which once
turned a legal hold on " alice" into one on "alice", and spaces alone into a hold on the tenant.

Model columns holding an identifier are ``IdentifierField``: every ModelForm (the admin's add and
change forms, inlines) gets ``IdentifierFormField`` for them without asking. Management commands
take identifiers with ``identifier_argument`` (``subject_argument`` for ``TENANT:USER_ID``).
tests/hardening/test_identifier_inputs.py walks every admin form, list filter and command argument.
"""

from __future__ import annotations

import argparse
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models

from agentstate.exceptions import InvalidInput
from agentstate.validation import IDENTIFIER_MAX_LENGTH, clean_identifier

_FIELD = "value"  # the name clean_identifier's messages are filed under here (the form names its own field)


def identifier_checked(value: str, *, max_length: int = IDENTIFIER_MAX_LENGTH) -> str:
    """``value`` unchanged when it is a valid identifier, else ``ValueError`` with the rule it breaks."""
    try:
        return clean_identifier(value, field=_FIELD, max_length=max_length)
    except InvalidInput as exc:
        raise ValueError(" ".join(exc.fields[_FIELD])) from None


class IdentifierFormField(forms.CharField):
    """An identifier exactly as typed: never stripped, empty kept empty (``empty_value``: None for a
    nullable column), anything else checked by ``clean_identifier``, its message on the field."""

    def __init__(self, *, max_length: int | None = IDENTIFIER_MAX_LENGTH, **kwargs: Any) -> None:
        kwargs["strip"] = False
        super().__init__(max_length=max_length, **kwargs)

    def clean(self, value: Any) -> Any:
        value = super().clean(value)
        if value in self.empty_values:
            return value
        try:
            return identifier_checked(value, max_length=self.max_length or IDENTIFIER_MAX_LENGTH)
        except ValueError as exc:
            raise ValidationError(str(exc), code="identifier") from None


class IdentifierField(models.CharField):
    """A column holding an identifier: its form field is ``IdentifierFormField``. Stored and migrated
    as the plain ``CharField`` it is (``deconstruct``), so the class changes no schema."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", IDENTIFIER_MAX_LENGTH)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.CharField", args, kwargs

    def formfield(self, **kwargs: Any) -> Any:
        return super().formfield(**{"form_class": IdentifierFormField, **kwargs})


class IdentifierArgument:
    """The ``type=`` of a management command's identifier argument: the value as typed, or argparse's
    error naming the argument and the rule. ``split``: the argument is ``shape``, a prefix and an id
    (``TENANT:USER_ID``), split at the first ``split`` into ``(prefix, id)``, both as typed."""

    def __init__(self, *, split: str = "", shape: str = "") -> None:
        self.split, self.shape = split, shape

    def __call__(self, value: str) -> Any:
        named = ""
        if self.split:
            prefix, sep, value = value.partition(self.split)
            if not sep:
                raise argparse.ArgumentTypeError(f"{prefix!r}: use {self.shape}.")
            named = self.shape.partition(self.split)[2] + " "
        try:
            checked = identifier_checked(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{named}{value!r} {exc}") from None
        return (prefix, checked) if self.split else checked


identifier_argument = IdentifierArgument()
subject_argument = IdentifierArgument(split=":", shape="TENANT:USER_ID")
