"""LangGraph's search filter: its meaning (``value_matches``, the semantics of LangGraph's
``InMemoryStore`` on JSON values) and its translation to SQL on PostgreSQL (jsonb) and SQLite
(JSON1), so that a search reads only the matching rows and pages them in the database.

A filter is a conjunction of its top-level keys. Each key is translated on its own; a key that
cannot be said in SQL exactly as Python says it is left to ``value_matches``, over the rows the
translated keys let through (``SqlFilter.rest``). Left to Python:

- a number of magnitude 2**53 or more (Python compares an int and a float exactly, the databases
  through a decimal or a double: 1e23 == 10**23 is false in Python, true in both);
- on SQLite, an object key other than printable ASCII without ``"`` and ``\\`` (its JSON paths take
  no escapes, and the stored text holds non-ASCII keys escaped);
- whatever lies past the first ``MAX_CONDITIONS`` conditions of a filter (SQLite bounds an
  expression's depth at 1,000).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ORDER_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}
OPERATORS = frozenset({"$eq", "$ne", *ORDER_OPERATORS})
SQL_ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
EXACT_NUMBERS = 2**53  # a number's magnitude below which the databases compare it as Python does
MAX_CONDITIONS = 200  # conditions per filter in SQL; past them, Python
_SQLITE_KEY = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII but " and \


def value_matches(value: dict[str, Any], filter: dict[str, Any]) -> bool:
    """Every key of ``filter`` matches the item's value: equal JSON, an object matched key by key,
    or an operator object (``{"$gt": 3}``). ``$gt``, ``$gte``, ``$lt``, ``$lte`` compare numbers
    as numbers and strings as strings (as LangGraph's PostgresStore); a value of another type does
    not match (where LangGraph's in-memory store raises)."""
    return all(_matches(value.get(key), wanted) for key, wanted in filter.items())


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator_holds(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(value, list)
            and len(value) == len(wanted)
            and all(_matches(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return value == wanted


def _operator_holds(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return value == operand
    if operator == "$ne":
        return value != operand
    if isinstance(operand, str):
        return isinstance(value, str) and ORDER_OPERATORS[operator](value, operand)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or isinstance(operand, str):
        return False
    return ORDER_OPERATORS[operator](value, operand)  # int and float compare exactly, at any size


# --- In SQL --------------------------------------------------------------------------------------


class _Unsupported(Exception):
    """This part of a filter is not said in SQL: Python evaluates it."""


Path = tuple[str | int, ...]  # object keys and array indexes from the value's root


@dataclass
class SqlFilter:
    """A filter in SQL: ``sql`` (None: no key translated) with its ``params``, and ``rest``, the
    keys ``value_matches`` must still check on the rows it selects."""

    sql: str | None
    params: list[Any] = field(default_factory=list)
    rest: dict[str, Any] = field(default_factory=dict)


class _Dialect:
    """The few JSON reads the translation needs; every condition it builds is true or false, never
    NULL (a missing key included), so NOT and AND keep Python's meaning."""

    def __init__(self, column: str) -> None:
        self.column = column
        self.params: list[Any] = []
        self.conditions = 0

    def _param(self, value: Any) -> str:
        self.params.append(value)
        return "%s"

    def _count(self) -> None:
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise _Unsupported

    def check_number(self, number: int | float) -> None:
        if abs(number) >= EXACT_NUMBERS:
            raise _Unsupported


class _Postgres(_Dialect):
    """jsonb: ``#>`` reads at a path given as a text[] parameter (any key, no quoting)."""

    def _at(self, path: Path, operator: str = "#>") -> str:
        return f"({self.column} {operator} {self._param([str(step) for step in path])}::text[])"

    def _is(self, path: Path, kind: str) -> str:
        return f"jsonb_typeof({self._at(path)}) = '{kind}'"

    def null(self, path: Path, *, missing_ok: bool) -> str:
        self._count()
        return f"COALESCE({self._is(path, 'null')}, {'TRUE' if missing_ok else 'FALSE'})"

    def boolean(self, path: Path, value: bool) -> str:
        self._count()
        return f"COALESCE({self._at(path)} = '{json.dumps(value)}'::jsonb, FALSE)"

    def number(self, path: Path, value: int | float) -> str:
        self._count()
        number = json.dumps(value)
        return f"COALESCE({self._is(path, 'number')} AND {self._at(path)} = {self._param(number)}::jsonb, FALSE)"

    def string(self, path: Path, value: str) -> str:
        self._count()
        return f"COALESCE({self._at(path)} = {self._param(json.dumps(value))}::jsonb, FALSE)"

    def order(self, path: Path, operator: str, operand: int | float | str) -> str:
        self._count()
        symbol = SQL_ORDER[operator]
        # Placeholders are made in the order they are written. Strings: code point order, as
        # Python's (the "C" collation of UTF-8); numbers: a CASE, so the cast runs only on a number.
        if isinstance(operand, str):
            return (
                f'COALESCE({self._is(path, "string")} AND {self._at(path, "#>>")} COLLATE "C" '
                f"{symbol} {self._param(operand)}, FALSE)"
            )
        return (
            f"COALESCE(CASE WHEN {self._is(path, 'number')} THEN {self._at(path)}::numeric "
            f"{symbol} {self._param(json.dumps(operand))}::numeric END, FALSE)"
        )

    def array_length(self, path: Path, length: int) -> str:
        self._count()
        return (
            f"COALESCE(CASE WHEN {self._is(path, 'array')} "
            f"THEN jsonb_array_length({self._at(path)}) = {length} END, FALSE)"
        )

    def object_size(self, path: Path, size: int) -> str:
        self._count()
        return (
            f"COALESCE(CASE WHEN {self._is(path, 'object')} "  # noqa: S608 (no input in the text)
            f"THEN (SELECT count(*) FROM jsonb_object_keys({self._at(path)})) = {size} END, FALSE)"
        )

    def is_object(self, path: Path) -> str:
        self._count()
        return f"COALESCE({self._is(path, 'object')}, FALSE)"


# SQLite's json_type names
NUMBER = "'integer', 'real'"
NULL, TRUE, FALSE, TEXT, ARRAY, OBJECT = (f"'{kind}'" for kind in ("null", "true", "false", "text", "array", "object"))


class _Sqlite(_Dialect):
    """JSON1: ``json_type`` (NULL where the path finds nothing) and ``json_extract`` at a path
    given as a parameter (``$."key"[0]``)."""

    def _path(self, path: Path) -> str:
        steps = []
        for step in path:
            if isinstance(step, int):
                steps.append(f"[{step}]")
            elif _SQLITE_KEY.fullmatch(step):
                steps.append(f'."{step}"')
            else:
                raise _Unsupported
        return self._param("$" + "".join(steps))

    def _is(self, path: Path, kinds: str) -> str:
        return f"json_type({self.column}, {self._path(path)}) IN ({kinds})"

    def _at(self, path: Path) -> str:
        return f"json_extract({self.column}, {self._path(path)})"

    def null(self, path: Path, *, missing_ok: bool) -> str:
        self._count()
        return f"COALESCE({self._is(path, NULL)}, {int(missing_ok)})"

    def boolean(self, path: Path, value: bool) -> str:
        self._count()
        return f"COALESCE({self._is(path, TRUE if value else FALSE)}, 0)"

    def number(self, path: Path, value: int | float) -> str:
        self._count()
        return f"COALESCE({self._is(path, NUMBER)} AND {self._at(path)} = {self._param(value)}, 0)"

    def string(self, path: Path, value: str) -> str:
        self._count()
        return f"COALESCE({self._is(path, TEXT)} AND {self._at(path)} = {self._param(value)}, 0)"

    def order(self, path: Path, operator: str, operand: int | float | str) -> str:
        self._count()
        kinds = TEXT if isinstance(operand, str) else NUMBER  # text: BINARY, code point order
        return f"COALESCE({self._is(path, kinds)} AND {self._at(path)} {SQL_ORDER[operator]} {self._param(operand)}, 0)"

    def array_length(self, path: Path, length: int) -> str:
        self._count()
        return (
            f"COALESCE({self._is(path, ARRAY)} AND json_array_length({self.column}, {self._path(path)}) = {length}, 0)"
        )

    def object_size(self, path: Path, size: int) -> str:
        self._count()
        is_object = self._is(path, OBJECT)
        keys = f"(SELECT count(*) FROM json_each({self.column}, {self._path(path)}))"  # noqa: S608 (no input in the text)
        return f"COALESCE({is_object} AND {keys} = {size}, 0)"

    def is_object(self, path: Path) -> str:
        self._count()
        return f"COALESCE({self._is(path, OBJECT)}, 0)"


Dialect = _Postgres | _Sqlite  # each: null, boolean, number, string, order, array_length, object_size, is_object


def _all(conditions: list[str]) -> str:
    return conditions[0] if len(conditions) == 1 else "(" + " AND ".join(conditions) + ")"


def _match(sql: Dialect, path: Path, wanted: Any) -> str:
    """``_matches`` in SQL."""
    if isinstance(wanted, dict) and any(k.startswith("$") for k in wanted):
        return _all([_operator(sql, path, op, operand) for op, operand in wanted.items()])
    if isinstance(wanted, dict):
        return _all([sql.is_object(path), *(_match(sql, (*path, k), v) for k, v in wanted.items())])
    if isinstance(wanted, list):
        return _all([sql.array_length(path, len(wanted)), *(_match(sql, (*path, i), w) for i, w in enumerate(wanted))])
    return _equal(sql, path, wanted, missing_ok=True)


def _operator(sql: Dialect, path: Path, operator: str, operand: Any) -> str:
    if operator == "$eq":
        return _equal(sql, path, operand, missing_ok=True)
    if operator == "$ne":
        return f"NOT {_equal(sql, path, operand, missing_ok=True)}"
    if operator not in SQL_ORDER:
        raise _Unsupported  # the request's check refuses it first
    if not isinstance(operand, str):
        sql.check_number(operand)
    return sql.order(path, operator, operand)


def _equal(sql: Dialect, path: Path, value: Any, *, missing_ok: bool) -> str:
    """Python's ``==`` between the JSON at ``path`` and ``value``: a missing key is None when
    ``missing_ok`` (``dict.get``), True equals 1 and False 0, an int equals the same float."""
    if value is None:
        return sql.null(path, missing_ok=missing_ok)
    if isinstance(value, bool):
        return f"({sql.boolean(path, value)} OR {sql.number(path, int(value))})"
    if isinstance(value, (int, float)):
        sql.check_number(value)
        if value in (0, 1):
            return f"({sql.number(path, value)} OR {sql.boolean(path, bool(value))})"
        return sql.number(path, value)
    if isinstance(value, str):
        return sql.string(path, value)
    if isinstance(value, list):
        items = (_equal(sql, (*path, i), v, missing_ok=False) for i, v in enumerate(value))
        return _all([sql.array_length(path, len(value)), *items])
    if isinstance(value, dict):
        members = (_equal(sql, (*path, k), v, missing_ok=False) for k, v in value.items())
        return _all([sql.object_size(path, len(value)), *members])
    raise _Unsupported


def filter_sql(filter: dict[str, Any], *, vendor: str, column: str) -> SqlFilter:
    """``filter`` on the JSON ``column`` (quoted, qualified) of ``vendor``'s database, the keys
    SQL cannot say exactly left in ``rest``."""
    dialects: dict[str, type[Dialect]] = {"postgresql": _Postgres, "sqlite": _Sqlite}
    if vendor not in dialects:
        return SqlFilter(None, rest=dict(filter))
    sql = dialects[vendor](column)
    conditions: list[str] = []
    rest: dict[str, Any] = {}
    for key, wanted in filter.items():
        params, count = len(sql.params), sql.conditions
        try:
            conditions.append(_match(sql, (key,), wanted))
        except _Unsupported:
            del sql.params[params:]
            sql.conditions = count
            rest[key] = wanted
    return SqlFilter(_all(conditions) if conditions else None, sql.params, rest)
