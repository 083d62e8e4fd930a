"""Several SQL statements in one round trip to PostgreSQL.

PostgreSQL runs them in order, each with a snapshot of its own (READ COMMITTED), in the caller's
transaction (or, in autocommit mode, in one transaction of their own). They go prepared, in
psycopg's pipeline (``agentstate.postgresql.base``: planned once per connection); where statements
are not prepared (PgBouncer in transaction mode), joined by semicolons as one simple-protocol query,
parameters bound in the client. A request's cost was mostly its round trips and the work around
each (docs/PERFORMANCE.md); on SQLite the statements run one by one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import connection


def prepared_cursor(database: Any = connection) -> Any:
    """A cursor of ``database`` (the default one unless given) for one statement per ``execute``
    that PostgreSQL plans once per connection (a small call's hot statements, whose planning cost
    more than running them); ``cursor()`` elsewhere."""
    prepared = getattr(database, "prepared_cursor", None)
    return database.cursor() if prepared is None else prepared()


def execute_all(*statements: tuple[str, Any]) -> list[list[tuple[Any, ...]]]:
    """Run ``(sql, params)`` statements in order; return each one's rows (none for a write). The
    parameters are lists, or all mappings (one name means one value in every statement)."""
    # Raw: runs statements their callers justify, several in one round trip (benchmarks/frameworks.py)
    results: list[list[tuple[Any, ...]]] = []
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            for sql, params in statements:
                cursor.execute(sql, params)
                results.append(cursor.fetchall() if cursor.description else [])
        return results
    joined = "; ".join(sql for sql, _ in statements)
    together: Any = (
        {name: value for _, named in statements for name, value in named.items()}
        if all(isinstance(params, Mapping) for _, params in statements)
        else [value for _, listed in statements for value in listed]
    )
    prepares = getattr(connection, "prepares", False)  # agentstate.postgresql's, as is pipelined_cursor
    with connection.pipelined_cursor(statements) if prepares else connection.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute(joined, together)
        while True:
            # psycopg's rownumber is None after a statement that returns no rows; its description
            # builds a column object per column (most of the pop's own CPU when asked).
            results.append(cursor.fetchall() if cursor.rownumber is not None else [])
            if not cursor.nextset():
                return results


def binary_rows(
    sql: str, params: list[Any], *, database: Any = connection, prepared: bool = False
) -> list[tuple[Any, ...]]:
    """The rows of a read of large bytes, in binary on PostgreSQL: Django's cursor binds parameters
    in the client, which allows text results only, where bytea travels as hex, twice its size,
    encoded by the server and decoded by the worker. ``prepared``: a statement of a few fixed
    shapes, planned once per connection. ``cursor()`` elsewhere."""
    # Raw: runs the statement its caller justifies (benchmarks/semantic.py, the vectors a search
    # reads; benchmarks/frameworks.py, LangGraph's channel values)
    bound = getattr(database, "bound_cursor", None)  # agentstate.postgresql's
    with database.cursor() if bound is None else bound(prepared=prepared, binary_results=True) as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()
