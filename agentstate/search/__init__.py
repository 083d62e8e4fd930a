"""Full-text search over people's data (docs/DESIGN.md "Search"), one module per job: ``engine``
(the indexes' queries: parsing, ranking, snippets, paging), ``memories`` (the entry point every
memory interface shares, which the memory app registers) and ``schema`` (the statements and the
migration operation that make an index). Migrations name ``agentstate.search``'s operation, so the
package keeps answering for what its modules hold."""

from agentstate.search.engine import (
    MARK,
    MAX_LIMIT,
    MAX_OFFSET,
    MAX_QUERY_LENGTH,
    MAX_WORDS,
    MAX_WORDS_QUERY_LENGTH,
    RANKED_MATCHES,
    Hit,
    TextIndex,
    fts5_query,
    owner_lexeme,
    query_clean,
    query_words,
    search_cursor,
    search_cursor_offset,
    text_indexes_compact,
    text_match,
    text_search,
    text_search_any,
    words_clean,
)
from agentstate.search.memories import MemoryHit, memory_search_register, search_memories
from agentstate.search.schema import json_text_index_operation, json_text_index_sql

__all__ = [
    "MARK",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "MAX_QUERY_LENGTH",
    "MAX_WORDS",
    "MAX_WORDS_QUERY_LENGTH",
    "RANKED_MATCHES",
    "Hit",
    "MemoryHit",
    "TextIndex",
    "fts5_query",
    "json_text_index_operation",
    "json_text_index_sql",
    "memory_search_register",
    "owner_lexeme",
    "query_clean",
    "query_words",
    "search_cursor",
    "search_cursor_offset",
    "search_memories",
    "text_indexes_compact",
    "text_match",
    "text_search",
    "text_search_any",
    "words_clean",
]
