"""Where erased values could linger outside the tables: PostgreSQL's planner statistics."""

from django.db import connection


def pg_stats_text() -> str:
    """Every sampled value PostgreSQL's planner statistics hold for this database's tables."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, attname, most_common_vals::text, histogram_bounds::text, most_common_elems::text "
            "FROM pg_stats WHERE schemaname = ANY (current_schemas(false))"
        )
        return "\n".join(" ".join(str(value) for value in row) for row in cursor.fetchall())
