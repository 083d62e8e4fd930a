"""Row plumbing of written-out queries: a model's columns as SQL, and a row of them made a model
instance with the values converted as the ORM converts them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import Any, TypeVar

from django.db.models import Field, Model

M = TypeVar("M", bound=Model)


def model_columns(model: type[Model], alias: str) -> str:
    """``model``'s concrete columns, in field order, as SQL over the table named ``alias``: the
    select list of a written-out query whose rows ``row_as_model`` makes models."""
    return ", ".join(f'{alias}."{field.column}"' for field in model._meta.concrete_fields)


def row_as_model(model: type[M], connection, values: Sequence[Any]) -> M:
    """A row of ``model_columns`` made a model instance, each value converted as the ORM's own
    queries convert it on this database (datetimes from SQLite's text, JSON decoded)."""
    converted = [
        value if convert is None else convert(value)
        for value, convert in zip(values, _converters(connection, model), strict=True)
    ]
    return model.from_db(connection.alias, [field.attname for field in model._meta.concrete_fields], converted)


@lru_cache(maxsize=512)  # per database connection wrapper (per alias and thread) and field
def column_converter(connection, field: Field) -> Callable[[Any], Any] | None:
    """What the ORM would apply to a value of ``field``'s column read on this database, found as
    the query compiler finds it; None when the value is taken as it comes."""
    column = field.get_col(field.model._meta.db_table)
    found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
    return partial(_apply, found, column, connection) if found else None


@lru_cache(maxsize=64)  # per database connection wrapper (per alias and thread) and model
def _converters(connection, model: type[Model]) -> list[Callable[[Any], Any] | None]:
    """``column_converter`` of each of ``model``'s concrete fields: a row's converters in one lookup."""
    return [column_converter(connection, field) for field in model._meta.concrete_fields]


def _apply(converters, column, connection, value):
    for convert in converters:
        value = convert(value, column, connection)
    return value
