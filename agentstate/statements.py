"""Several SQL statements in one round trip to PostgreSQL.

Django binds parameters in the client (psycopg's client-side cursor), so statements joined by
semicolons go as one simple-protocol query: PostgreSQL runs them in order, each with a snapshot of
its own (READ COMMITTED), in the caller's transaction. A request's cost was mostly its round trips
and the work around each (docs/PERFORMANCE.md); elsewhere the statements run one by one.
"""

from __future__ import annotations

from typing import Any

from django.db import connection


def execute_all(*statements: tuple[str, list[Any]]) -> list[list[tuple[Any, ...]]]:
    """Run ``(sql, params)`` statements in order; return each one's rows (none for a write)."""
    # Raw: runs statements their callers justify, several in one round trip (benchmarks/frameworks.py)
    results: list[list[tuple[Any, ...]]] = []
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            for sql, params in statements:
                cursor.execute(sql, params)
                results.append(cursor.fetchall() if cursor.description else [])
            return results
        cursor.execute("; ".join(sql for sql, _ in statements), [p for _, params in statements for p in params])
        while True:
            results.append(cursor.fetchall() if cursor.description else [])
            if not cursor.nextset():
                return results
