"""What a database's own text index holds (agentstate.search), read past the engine: the search
tests check that writes and removals reach the index itself, not only the search's answers."""

from django.db import connection

from agentstate.search.engine import TextIndex


def raw_index_ids(index: TextIndex, word: str) -> list[int]:
    """The row ids ``index`` finds for ``word``, whatever tenant or user."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"SELECT t.id FROM {index.table} t WHERE {index.pg_vector} @@ to_tsquery('simple', %s) ORDER BY t.id",  # noqa: S608 (constant SQL)
                [word],
            )
        else:
            cursor.execute(
                f"SELECT rowid FROM {index.fts_table} WHERE {index.fts_table} MATCH %s ORDER BY rowid",  # noqa: S608
                [f'"{word}"'],
            )
        return [row[0] for row in cursor.fetchall()]
