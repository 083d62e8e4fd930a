"""Large histories made fast, for the benchmarks and for the tests that hold query counts and plans
at size: one ``INSERT ... SELECT`` over a number series per table (``generate_series`` on
PostgreSQL, a recursive CTE on SQLite), so 1,000,000 rows take seconds, not the minutes that one
ORM object per row would."""

from __future__ import annotations

import json

import numpy as np
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from agentstate.tenancy.models import Tenant
from sessions_app.models import Message, Round, Session
from userdata_app.models import UserDatum


def json_sql(text_sql: str) -> str:
    """A SQL text expression stored in a JSON column."""
    return f"({text_sql})::jsonb" if connection.vendor == "postgresql" else text_sql


def insert_series(*, model, count: int, values: dict[str, str], params: list | None = None) -> None:
    """Insert ``count`` rows of ``model``; ``values`` maps column -> SQL expression of ``i``
    (1..count). ``params`` fill the ``%s`` placeholders of the expressions, in column order."""
    _insert_select(model=model, values=values, count=count, params=params)


def _insert_select(*, model, values: dict[str, str], count: int, params: list | None, join: str = "") -> None:
    """``INSERT INTO <model> SELECT <values> FROM <series s(i)> [join]``."""
    # Raw: the benchmarks' fills of 1,000,000 rows: one INSERT … SELECT; bulk_create sends each row
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in values)
    exprs = ", ".join(values.values())
    count = int(count)
    if connection.vendor == "postgresql":
        sql = f"INSERT INTO {table} ({columns}) SELECT {exprs} FROM generate_series(1, {count}) AS s(i) {join}"  # noqa: S608 (quoted names, an int and the callers' own SQL expressions; values are parameters)
    else:
        sql = (
            f"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {count}) "  # noqa: S608 (as above)
            f"INSERT INTO {table} ({columns}) SELECT {exprs} FROM s {join}"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])


def sessions_create(*, tenant: Tenant, user_id: str, count: int, prefix: str = "s") -> None:
    """``count`` empty sessions ``<prefix>1..<prefix>count`` of one user."""
    now = timezone.now()
    insert_series(
        model=Session,
        count=count,
        values={
            "tenant_id": "%s",
            "user_id": "%s",
            "session_id": f"'{prefix}' || i",
            "agent_id": "'agent'",
            "workspace_id": "''",
            "metadata": json_sql("'{}'"),
            "created_at": "%s",
            "updated_at": "%s",
            "last_seq": "0",
            "last_round_id": "0",
            "version": "1",
        },
        params=[tenant.pk, user_id, now, now],
    )


def history_fill(*, session: Session, messages: int = 0, rounds: int = 0, content: str | None = None) -> Session:
    """Give ``session`` ``messages`` messages (seq 1..n) and ``rounds`` rounds (ids 1..n) and set
    its counters to match, as the services would have. ``content``: every message's text (a short
    numbered line when None)."""
    now = timezone.now()
    owner = [session.pk, session.tenant_id, session.user_id]
    if messages:
        text = "'\"Message ' || i || ' of a long conversation, about as long as a short chat turn.\"'"
        insert_series(
            model=Message,
            count=messages,
            values={
                "session_id": "%s",
                "tenant_id": "%s",
                "user_id": "%s",
                "seq": "i",
                "role": "CASE WHEN i %% 2 = 0 THEN 'assistant' ELSE 'user' END",
                "type": "'message'",
                "status": "''",
                "name": "''",
                "content": json_sql(text if content is None else "%s"),
                "metadata": json_sql("'{}'"),
                "created_at": "%s",
            },
            params=[*owner, *([] if content is None else [json.dumps(content)]), now],
        )
    if rounds:
        insert_series(
            model=Round,
            count=rounds,
            values={
                "session_id": "%s",
                "tenant_id": "%s",
                "user_id": "%s",
                "round_id": "i",
                "state": json_sql(
                    '\'{"step": \' || i || \', "plan": "look up, summarise, answer", "memory": [1, 2, 3]}\''
                ),
                "created_at": "%s",
                "updated_at": "%s",
                "version": "1",
            },
            params=[*owner, now, now],
        )
    Session.objects.filter(pk=session.pk).update(
        last_seq=session.last_seq + messages,
        message_count=session.message_count + messages,
        last_round_id=max(session.last_round_id, rounds),
    )
    session.refresh_from_db()
    return session


def messages_for_every_session(*, tenant: Tenant, per_session: int) -> int:
    """``per_session`` more messages in every session of ``tenant``, in one statement; returns
    how many were added."""
    session_table = connection.ops.quote_name(Session._meta.db_table)
    _insert_select(
        model=Message,
        count=per_session,
        values={
            "session_id": "x.id",
            "tenant_id": "x.tenant_id",
            "user_id": "x.user_id",
            "seq": "x.last_seq + i",
            "role": "CASE WHEN i %% 2 = 0 THEN 'assistant' ELSE 'user' END",
            "type": "'message'",
            "status": "''",
            "name": "''",
            "content": json_sql("'\"Message ' || i || ' of a long conversation.\"'"),
            "metadata": json_sql("'{}'"),
            "created_at": "%s",
        },
        params=[timezone.now(), tenant.pk],
        join=f"CROSS JOIN {session_table} x WHERE x.tenant_id = %s",
    )
    sessions = Session.objects.filter(tenant=tenant)
    sessions.update(last_seq=F("last_seq") + per_session, message_count=F("message_count") + per_session)
    return sessions.count() * per_session


def user_data_create(*, tenant: Tenant, user_id: str, count: int) -> None:
    """``count`` user-data keys ``k1..k<count>`` of one user."""
    now = timezone.now()
    insert_series(
        model=UserDatum,
        count=count,
        values={
            "tenant_id": "%s",
            "user_id": "%s",
            "key": "'k' || i",
            "value": json_sql("'{\"preference\": ' || i || '}'"),
            "created_at": "%s",
            "updated_at": "%s",
        },
        params=[tenant.pk, user_id, now, now],
    )


def memory_vectors_fill(*, tenant: Tenant, people: list[tuple[str, int]], rng: np.random.Generator, dims: int) -> None:
    """Memory items with one random ``dims``-long vector each: ``count`` for each ``(user_id,
    count)`` of ``people``, under ``("users", user_id, "facts")``, in bulk (2,000 a transaction)."""
    from userdata_app.memory.models import MemoryItem, MemoryVector
    from userdata_app.memory.selectors import namespace_text, user_label

    now, batch = timezone.now(), 2_000
    for user_id, count in people:
        namespace = namespace_text(["users", user_label(user_id), "facts"])
        for start in range(0, count, batch):
            with transaction.atomic():
                items = MemoryItem.objects.bulk_create(
                    [
                        MemoryItem(
                            tenant=tenant,
                            user_id=user_id,
                            namespace=namespace,
                            key=f"k{i}",
                            value={"text": f"fact {i} of {user_id}"},
                            created_at=now,
                            updated_at=now,
                        )
                        for i in range(start, min(count, start + batch))
                    ]
                )
                if connection.vendor != "postgresql":  # SQLite's bulk_create sets no pk
                    pks = dict(MemoryItem.objects.filter(tenant=tenant, namespace=namespace).values_list("key", "pk"))
                    for item in items:
                        item.pk = pks[item.key]
                vectors = rng.standard_normal((len(items), dims), dtype=np.float32)
                MemoryVector.objects.bulk_create(
                    [
                        MemoryVector(item_id=item.pk, path="text", vector=vector.tobytes())
                        for item, vector in zip(items, vectors, strict=True)
                    ]
                )


def analyze() -> None:
    """Refresh planner statistics after a bulk load, as autovacuum would soon do."""
    # Raw: no ORM form (ANALYZE after a benchmark's bulk fill)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
