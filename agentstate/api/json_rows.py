"""Rows that leave the database as the API's JSON text.

A long page of history spent most of its time in Python turning columns into values and back into
JSON: decoding each JSON column, parsing each datetime, encoding it all again (docs/PERFORMANCE_HISTORY.md,
"second round"). For its list endpoints the database writes each row's JSON itself (SQLite's
``JSON_OBJECT``, PostgreSQL's ``TO_JSON`` of each value) and the renderer embeds that text unchanged.

The expression is derived from the endpoint's ``Output`` serializer, so a row has the fields the
serializer declares, under the same names; the values are the ones DRF would write (datetimes in
UTC as ISO 8601 with ``Z``), which ``tests/api/test_json_rows.py`` checks field by field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, partial
from typing import TYPE_CHECKING, Any, cast

from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.models import Case, Expression, F, Func, Q, QuerySet, When
from django.db.models.expressions import RawSQL
from django.db.models.query import BaseIterable, ModelIterable
from django.db.models.sql import Query

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.models.sql.compiler import SQLCompiler, _AsSqlType
from rest_framework import serializers

from agentstate.api.renderers import RawJSON


class JSONValue(Func):
    """A JSON column (or JSON text) as a JSON value, not as a string holding JSON."""

    output_field = models.TextField()

    def as_sqlite(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any) -> _AsSqlType:
        return self.as_sql(compiler, connection, function="JSON", **extra_context)

    def as_postgresql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any) -> _AsSqlType:
        # jsonb prints as JSON text; text from a nested JSONRow already is.
        return self.as_sql(compiler, connection, template="(%(expressions)s)::text", **extra_context)


class UTCTimestamp(Func):
    """A datetime column as DRF writes it: ISO 8601 in UTC with ``Z``, microseconds only when not 0."""

    output_field = models.TextField()

    def as_sqlite(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any) -> _AsSqlType:
        # Stored as text, "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC when Django wrote it; raw SQL may have
        # added an offset ("+00:00"), which STRFTIME applies. The microseconds are read off the text.
        # Percent signs doubled twice: once for this template, once for the query's parameters.
        template = (
            "STRFTIME('%%%%Y-%%%%m-%%%%dT%%%%H:%%%%M:%%%%S', %(expressions)s) "
            "|| CASE WHEN SUBSTR(%(expressions)s, 20, 1) = '.' THEN SUBSTR(%(expressions)s, 20, 7) ELSE '' END || 'Z'"
        )
        return self.as_sql(compiler, connection, template=template, **extra_context)

    def as_postgresql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any) -> _AsSqlType:
        utc = "(%(expressions)s AT TIME ZONE 'UTC')"
        template = (
            f"CASE WHEN DATE_PART('microseconds', {utc})::bigint %%%% 1000000 = 0 "
            f'THEN TO_CHAR({utc}, \'YYYY-MM-DD"T"HH24:MI:SS"Z"\') '
            f'ELSE TO_CHAR({utc}, \'YYYY-MM-DD"T"HH24:MI:SS.US"Z"\') END'
        )
        return self.as_sql(compiler, connection, template=template, **extra_context)


class JSONRow(Func):
    """An object of ``key=expression`` pairs, in that order, as JSON text."""

    output_field = models.TextField()

    def __init__(self, **fields: Any) -> None:
        self.keys = list(fields)
        super().__init__(*fields.values())

    def as_sqlite(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any) -> _AsSqlType:
        parts, params = [], []
        for name, expression in zip(self.keys, self.get_source_expressions(), strict=True):
            sql, expression_params = compiler.compile(expression)
            parts.append(f"%s, {sql}")
            params.extend([name, *expression_params])
        return f"JSON_OBJECT({', '.join(parts)})", tuple(params)

    def as_postgresql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any) -> _AsSqlType:
        # Written out, not JSON_BUILD_OBJECT: that one puts " : " between every key and value, and
        # costs about twice as much. Numbers and JSON print as they are; only text needs TO_JSON.
        parts, params = [], []
        for index, (name, expression) in enumerate(zip(self.keys, self.get_source_expressions(), strict=True)):
            sql, expression_params = compiler.compile(expression)
            printed = isinstance(expression, JSONValue) or isinstance(expression.output_field, models.IntegerField)
            parts.append(
                f"%s::text || COALESCE(({sql})::text, 'null')"
                if printed
                else f"%s::text || COALESCE(TO_JSON({sql})::text, 'null')"
            )
            params.extend([("{" if index == 0 else ",") + json.dumps(name) + ":", *expression_params])
        return f"({' || '.join(parts)} || '}}')", tuple(params)


def json_rows(queryset: QuerySet, serializer_class: type[serializers.Serializer], *columns: str) -> QuerySet:
    """``queryset`` as tuples: ``columns`` (what a paginator orders by), then the row in
    ``serializer_class``'s shape as JSON text written by the database."""
    model = cast(type[models.Model], queryset.model)
    return queryset.annotate(**{ROW: row_column(serializer_class, model)}).values_list(*columns, ROW)


ROW = "json_row"  # the JSON column's name in the SQL of json_rows (and of byte_bounded's rows)


@dataclass
class ByteBudget:
    """How many bytes of JSON one fetch of ``byte_bounded`` rows may return; a fetch that runs out
    first records how many rows fit."""

    limit: int
    rows_that_fit: int | None = None


def byte_bounded(rows: QuerySet, budget: ByteBudget) -> QuerySet:
    """``rows`` of ``json_rows`` (or any ``values_list`` whose last column is JSON text named
    ``ROW``) whose fetch ends once ``budget`` is spent: the rows that fit (at
    least one, whatever its size), then the first row that did not, with its JSON left out (None),
    so a paginator still sees where the next page starts. The database counts the bytes in the
    same query, in the queryset's own order: rows past the budget never leave it. The fetch must
    be sliced (a page): its row count shares out the budget."""
    bounded = rows.all()
    bounded._iterable_class = partial(_ByteBoundedRows, budget=budget)  # type: ignore[assignment]
    return bounded


class _ByteBoundedRows(BaseIterable):
    """One query gives the page with each row's JSON only if its length is within the row's share of
    the budget (the budget over the rows asked for): when every row is, the page fits and that was
    its one query (a length per row, no sort). Otherwise a second query gives the rows' lengths,
    which say how many fit, and a third reads just those: rows past the budget never leave the
    database."""

    def __init__(self, queryset: QuerySet, *, budget: ByteBudget, **kwargs: Any) -> None:
        super().__init__(queryset, **kwargs)
        self.budget = budget

    def __iter__(self) -> Iterator[Any]:
        query = self.queryset.query
        if query.high_mark is None:
            raise ImproperlyConfigured("byte_bounded rows are fetched a page at a time: slice them.")
        compiler = query.get_compiler(self.queryset.db)
        sql, params = compiler.as_sql()

        def fitting(count: int) -> tuple[str, Sequence[Any]]:
            first = query.chain()
            first.clear_limits()
            first.set_limits(query.low_mark, query.low_mark + count)
            return first.get_compiler(self.queryset.db).as_sql()

        fetched = bounded_fetch(
            compiler.connection,
            sql,
            params,
            columns=_selected_columns(query),
            rows=query.high_mark - query.low_mark,
            budget=self.budget,
            fitting=fitting,
        )
        return compiler.results_iter(results=[fetched], tuple_expected=True)


def bounded_fetch(
    connection: BaseDatabaseWrapper,
    sql: str,
    params: Sequence[Any],
    *,
    columns: Sequence[str],
    rows: int,
    budget: ByteBudget,
    fitting: Callable[[int], tuple[str, Sequence[Any]]],
    fetched: list[tuple[Any, ...]] | None = None,
) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (a page of ``rows`` rows: ``columns``, then the JSON named ``ROW``) as
    ``byte_bounded`` gives them; ``fitting(n)`` is the query of its first ``n`` rows. ``fetched``:
    the first query's rows (each row's JSON within its share of the budget, else None) when the
    caller read them already."""
    # Raw: benchmarks/scaling.py recent 20/50 ratio ≤ 1.3, a page ≤ 4 MiB; the page's JSON is sized in SQL
    postgresql = connection.vendor == "postgresql"
    selected = ", ".join(connection.ops.quote_name(name) for name in columns)
    size = f"OCTET_LENGTH({ROW})" if postgresql else f"LENGTH(CAST({ROW} AS BLOB))"
    # No LIMIT (-1, ALL) keeps SQLite from flattening a subquery into the query around it, which
    # would write each row's JSON once per mention; PostgreSQL never flattens one with a LIMIT.
    unlimited = " LIMIT ALL" if postgresql else " LIMIT -1"
    shared = f"SELECT {selected}, CASE WHEN {size} <= %s THEN {ROW} END FROM ({sql}) _page{unlimited}"  # noqa: S608 (a compiled or written-out query, quoted columns; values are parameters)
    with connection.cursor() as cursor:
        if fetched is None:
            cursor.execute(shared, (budget.limit // rows, *params))
            fetched = cursor.fetchall()
        if all(row[-1] is not None for row in fetched):
            return fetched
        cursor.execute(f"SELECT {size} FROM ({sql}) _page", params)  # noqa: S608 (as above)
        lengths = [length for (length,) in cursor.fetchall()]
    held, fit = 0, len(fetched)
    for index, length in enumerate(lengths):
        if held >= budget.limit:
            fit = budget.rows_that_fit = index
            break
        held += length
    with connection.cursor() as cursor:
        cursor.execute(*fitting(fit))
        kept = cursor.fetchall()
    return kept + [(*row[:-1], None) for row in fetched[fit : fit + 1]]  # where the next page starts


def _selected_columns(query: Query) -> list[str]:
    """The columns before the JSON in a ``values_list`` query of ``json_rows``, as its SQL names them."""
    meta = query.get_meta()
    return [str(cast(models.Field, meta.get_field(name)).column) for name in query.values_select]


def byte_bounded_models(
    queryset: QuerySet, budget: ByteBudget, *, size: Expression, large: tuple[str, ...]
) -> QuerySet:
    """Model rows (a sliced page of ``queryset``) whose ``large`` fields leave the database only for
    the rows that fit ``budget``, by their ``size`` as the database counts it: the rows that fit (at
    least one), then the first that did not, without its large fields, where the next page starts.
    As ``byte_bounded``: one query when every row is within its share of the budget, else a second
    one for the large fields of the rows that fit."""
    bounded = queryset.all()
    bounded._iterable_class = partial(  # type: ignore[assignment]
        _ByteBoundedModels, budget=budget, size=size, large=large
    )
    return bounded


class _ByteBoundedModels(ModelIterable):
    def __init__(
        self, queryset: QuerySet, *, budget: ByteBudget, size: Expression, large: tuple[str, ...], **kwargs: Any
    ) -> None:
        super().__init__(queryset, **kwargs)
        self.budget, self.size, self.large = budget, size, large

    def __iter__(self) -> Iterator[Any]:
        query = self.queryset.query
        if query.high_mark is None:
            raise ImproperlyConfigured("byte_bounded_models rows are fetched a page at a time: slice them.")
        share = self.budget.limit // (query.high_mark - query.low_mark)
        columns = {field.name: field for field in self.queryset.model._meta.concrete_fields}
        fields = [columns[name] for name in self.large]
        within = Q(_stored_bytes__lte=share)
        light = self.queryset.defer(*self.large).annotate(
            _stored_bytes=self.size,
            **{f"_within_{f.name}": Case(When(within, then=F(f.name)), output_field=f) for f in fields},
        )
        light._iterable_class = ModelIterable
        rows = list(light)
        fit = len(rows)
        if any((row._stored_bytes or 0) > share for row in rows):
            held = 0
            for index, row in enumerate(rows):
                if held >= self.budget.limit:
                    fit = self.budget.rows_that_fit = index
                    rows = rows[: fit + 1]
                    break
                held += row._stored_bytes or 0
            values = self.queryset.model._base_manager.using(self.queryset.db).filter(pk__in=[r.pk for r in rows[:fit]])
            found = {pk: rest for pk, *rest in values.values_list("pk", *self.large)}
        else:
            found = {row.pk: [getattr(row, f"_within_{f.name}") for f in fields] for row in rows}
        for row in rows[:fit]:
            for field, value in zip(fields, found[row.pk], strict=True):
                setattr(row, field.attname, value)
        return iter(rows)


def embedded(rows) -> RawJSON:
    """A list of the rows of ``json_rows`` (the JSON text is each row's last column), ready to be
    put in an answer as one piece."""
    return RawJSON("[" + ",".join(row[-1] for row in rows) + "]")


@cache
def row_column(serializer_class: type[serializers.Serializer], model: type[models.Model]) -> RawSQL:
    """``row_expression`` compiled once into SQL over ``model``'s own table: resolving and compiling
    a dozen column expressions on every request cost more than running the query. It fits a query
    of ``model`` that names its table as itself (no self-join), on the engine the deployment's
    databases share (the settings give the default and its replicas one engine)."""
    # Raw: benchmarks/latency.py full-read target; building the expression per request cost more than the run
    query = Query(model)
    expression = row_expression(serializer_class, model).resolve_expression(query)
    sql, params = query.get_compiler(connection=connections[DEFAULT_DB_ALIAS]).compile(expression)
    return RawSQL(sql, tuple(params), output_field=models.TextField())  # noqa: S611 (SQL compiled by Django from a model's expression, params apart)


def row_expression(serializer_class: type[serializers.Serializer], model: type[models.Model]) -> JSONRow:
    """``serializer_class``'s fields over ``model``'s columns. A field whose source is not a column
    comes from the serializer's ``json_sources``; a column type this module cannot write the way
    DRF does is refused, not guessed."""
    overrides: dict[str, Any] = getattr(serializer_class, "json_sources", {})
    fields = {}
    for field in serializer_class()._readable_fields:
        source = str(field.source)
        if source in overrides:
            fields[str(field.field_name)] = overrides[source]
            continue
        try:
            column = model._meta.get_field(source)
        except FieldDoesNotExist as missing:
            raise ImproperlyConfigured(
                f"{serializer_class.__name__}.{field.field_name}: no column {source}"
            ) from missing
        fields[str(field.field_name)] = _written(column, F(source), serializer_class)
    return JSONRow(**fields)


def _written(column: object, value: F, serializer_class: type) -> Any:
    if isinstance(column, models.JSONField):
        return JSONValue(value)
    if isinstance(column, models.DateTimeField):
        return UTCTimestamp(value)
    if isinstance(column, models.CharField | models.TextField | models.IntegerField):
        return value  # BigIntegerField and PositiveIntegerField are IntegerFields
    raise ImproperlyConfigured(f"{serializer_class.__name__}: no JSON rendering for {type(column).__name__}")
