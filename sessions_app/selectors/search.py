"""Full-text search of messages (``agentstate.search``): the messages' index and a user's search."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connections, router

from agentstate.search import engine
from agentstate.search.engine import TextIndex
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier
from sessions_app.models import (
    Message,
)

# --- Search --------------------------------------------------------------------------------

# The messages' text index (created by migration 0013): every string value of a message's content,
# whatever its shape (a string, parts), in a generated column on PostgreSQL (not a model field:
# the database alone writes it), in an FTS5 table on SQLite.
MESSAGE_INDEX = TextIndex(
    table=Message._meta.db_table,
    pg_vector="t.search_vector",
    pg_text="(SELECT string_agg(v #>> '{}', ' ') FROM jsonb_path_query(t.content, "
    "'strict $.** ? (@.type() == \"string\")') v)",
    fts_table="sessions_app_message_search",
    pg_owner=("tenant_id", "user_id"),  # a search is one user's: the index hands over theirs alone
)


@dataclass(frozen=True)
class MessageHit:
    session_id: str
    seq: int
    role: str
    rank: float
    snippet: str


def message_search(*, tenant: Tenant, user_id: str, query: str, limit: int, offset: int = 0) -> list[MessageHit]:
    """The messages of a user's sessions whose content matches ``query`` (``agentstate.search``):
    the newest ``RANKED_MATCHES``, best first. Reads where ``router`` sends them: a replica inside ``replica_reads``."""
    user_id = clean_identifier(user_id, field="user_id")
    query = engine.query_clean(query)
    hits = engine.text_search(
        MESSAGE_INDEX,
        connection=connections[router.db_for_read(Message)],
        query=query,
        # A message's owner is its session's, copied when written: message_user_newest hands the
        # user's matches newest first, as text_search ranks them.
        scope="t.tenant_id = %s AND t.user_id = %s",
        scope_params=[tenant.pk, user_id],
        owner=(tenant.pk, user_id),
        newest="t.created_at",
        columns="s.session_id, t.seq, t.role",
        joins="JOIN sessions_app_session s ON s.id = t.session_id",
        limit=limit,
        offset=offset,
    )
    return [
        MessageHit(session_id=session_id, seq=seq, role=role, rank=hit.rank, snippet=hit.snippet)
        for hit in hits
        for session_id, seq, role in [hit.row]
    ]
