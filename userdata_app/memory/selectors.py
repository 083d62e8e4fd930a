"""Reads of memory items, always within one tenant; an expired item is never read."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from django.db import connections, router
from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Substr
from django.utils import timezone

from agentstate import search, streaming
from agentstate.search import MemoryHit, TextIndex
from agentstate.subject_data import rows_held
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier
from userdata_app.memory import filters
from userdata_app.memory.models import MemoryItem, MemorySource, MemoryVector

SEPARATOR = "."  # between a namespace's labels; LangGraph refuses it inside a label
USERS = "users"  # the first label of every namespace that names its person: ("users", <user_id>, ...)
SOURCE_COLUMNS = ("session_id", "app_name", "thread_id", "ref")  # a source as the API writes it
WILDCARD = "*"  # matches any one label in list_namespaces' prefix and suffix


_ESCAPED = re.compile("%(25|2E)")


def user_label(user_id: str) -> str:
    """The namespace label of a user id: a user id may hold "." (an e-mail), a label may not, so
    "%" is written "%25" and "." "%2E"."""
    return user_id.replace("%", "%25").replace(".", "%2E")


def label_user(label: str) -> str:
    """The user id a namespace's second label names (``user_label`` read back)."""
    return _ESCAPED.sub(lambda m: "%" if m.group(1) == "25" else ".", label)


def namespace_text(labels: tuple[str, ...] | list[str]) -> str:
    return SEPARATOR.join(labels)


def namespace_labels(text: str) -> list[str]:
    return text.split(SEPARATOR)


def live_items(*, tenant: Tenant) -> QuerySet[MemoryItem]:
    now = timezone.now()
    return MemoryItem.objects.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now), tenant=tenant)


def under_prefix(rows: QuerySet[MemoryItem], prefix: tuple[str, ...] | list[str]) -> QuerySet[MemoryItem]:
    """Items whose namespace starts with these labels. The LIKE can use the index; the exact
    comparison of the leading characters keeps SQLite's case-blind LIKE from matching ``("Users",)``."""
    if not prefix:
        return rows
    if len(prefix) >= 2 and prefix[0] == USERS:
        rows = rows.filter(user_id=label_user(prefix[1]))  # the subject's index
    text = namespace_text(prefix)
    below = text + SEPARATOR
    return rows.alias(head=Substr("namespace", 1, len(below))).filter(
        Q(namespace=text) | Q(namespace__startswith=below, head=below)
    )


def memory_keys_stored(*, tenant: Tenant, namespace: list[str]) -> set[str]:
    """The keys a namespace holds, expired items not yet swept included (an import adds the others)."""
    rows = MemoryItem.objects.filter(tenant=tenant, namespace=namespace_text(namespace))
    return set(rows.values_list("key", flat=True))


def item_data(item: MemoryItem) -> dict[str, Any]:
    return {
        "namespace": namespace_labels(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
    }


def items_sources(pks: Iterable[int]) -> dict[int, list[dict[str, str]]]:
    """The sources of these items (lineage), in one query: each a session (``session_id`` and
    ``app_name``, or ``thread_id``) and a ``ref`` within it, ``session_deleted`` true where the
    session is gone and the memory policy kept the item; an item made of none has []."""
    found: dict[int, list[dict[str, str]]] = defaultdict(list)
    columns = (*SOURCE_COLUMNS, "session_deleted")
    rows = MemorySource.objects.filter(item__in=list(pks)).order_by("item", "pk")
    for item_pk, *values in rows.values_list("item", *columns):
        found[item_pk].append({name: value for name, value in zip(columns, values, strict=True) if value})
    return found


def items_vectors(pks: Iterable[int]) -> dict[int, dict[str, list[float]]]:
    """The vectors of these items that have any (semantic search's), by field path, as numbers."""
    found: dict[int, dict[str, list[float]]] = defaultdict(dict)
    rows = MemoryVector.objects.filter(item__in=list(pks)).order_by("item", "path")
    for item_pk, path, blob in rows.values_list("item", "path", "vector"):
        found[item_pk][path] = np.frombuffer(blob, dtype="<f4").tolist()
    return found


def items_parts(items: list[MemoryItem]) -> None:
    """Attach to each item its sources and vectors (``parts``), two queries for the batch: what a
    subject export and a portable record show of an item beside its row."""
    sources, vectors = items_sources([i.pk for i in items]), items_vectors([i.pk for i in items])
    for item in items:
        item.parts = (sources.get(item.pk, []), vectors.get(item.pk, {}))  # type: ignore[attr-defined]


def filtered(
    rows: QuerySet[MemoryItem], filter: dict[str, Any] | None, *, alias: str
) -> tuple[QuerySet[MemoryItem], dict[str, Any]]:
    """``rows`` narrowed by LangGraph's ``filter`` in SQL, and the part of it SQL does not say
    (``filters.filter_sql``), which ``filters.value_matches`` checks on them."""
    # Raw: no ORM form: LangGraph's filter needs the JSON type of each value (jsonb_typeof, json_type)
    if not filter:
        return rows, {}
    connection = connections[alias]
    table, column = (connection.ops.quote_name(name) for name in (MemoryItem._meta.db_table, "value"))
    compiled = filters.filter_sql(filter, vendor=connection.vendor, column=f"{table}.{column}")
    if compiled.sql is not None:
        rows = rows.filter(RawSQL(compiled.sql, compiled.params, output_field=BooleanField()))  # noqa: S611 (values are parameters)
    return rows, compiled.rest


def memory_search(
    *,
    tenant: Tenant,
    namespace_prefix: list[str],
    filter: dict[str, Any] | None,
    limit: int,
    offset: int,
) -> list[MemoryItem]:
    """Items under the prefix that match the filter, most recently updated first, paged by the
    database. A part of the filter SQL does not say is checked here over the items in that order,
    stopping once ``offset + limit`` matched."""
    rows = under_prefix(live_items(tenant=tenant), namespace_prefix)
    rows, rest = filtered(rows, filter, alias=router.db_for_read(MemoryItem))
    rows = rows.order_by("-updated_at", "namespace", "key")
    if not rest or not limit:
        return list(rows[offset : offset + limit])
    found: list[MemoryItem] = []
    for item in rows.iterator(chunk_size=500):
        if filters.value_matches(item.value, rest):
            found.append(item)
            if len(found) == offset + limit:
                break
    return found[offset:]


# The items' text index (created by migration 0011): every string value of an item's value, in a
# generated column on PostgreSQL (not a model field: the database alone writes it), in an FTS5 table
# on SQLite.
MEMORY_INDEX = TextIndex(
    table=MemoryItem._meta.db_table,
    pg_vector="t.search_vector",
    pg_text="(SELECT string_agg(v #>> '{}', ' ') FROM jsonb_path_query(t.value, "
    "'strict $.** ? (@.type() == \"string\")') v)",
    fts_table="userdata_app_memoryitem_search",
)
_LOAD_CHUNK = 200  # ranked items read at a time while a filter is applied


def memory_text_search(
    *,
    tenant: Tenant,
    user_id: str | None,
    query: str,
    namespace_prefix: list[str],
    filter: dict[str, Any] | None,
    limit: int,
    offset: int,
) -> list[MemoryHit]:
    """``agentstate.search.search_memories``: the live items holding any of the query's words that
    match the filter, ranked by the index. A part of the filter SQL does not say is checked here
    over the ranked items, stopping once ``offset + limit`` matched. Reads where ``router`` sends
    them: the primary, as all user data."""
    words = search.words_clean(query)
    if user_id is not None:
        user_id = clean_identifier(user_id, field="user_id")
    alias = router.db_for_read(MemoryItem)
    rows = live_items(tenant=tenant)
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    rows, rest = filtered(under_prefix(rows, namespace_prefix), filter, alias=alias)
    scope, scope_params = rows.values("pk").query.get_compiler(alias).as_sql()
    ranked = search.text_search_any(
        MEMORY_INDEX,
        connection=connections[alias],
        words=words,
        scope=f"t.id IN ({scope})",
        scope_params=list(scope_params),
        newest="t.updated_at",
        **({} if rest else {"limit": limit, "offset": offset}),
    )
    found: list[MemoryHit] = []
    wanted = limit if not rest else offset + limit
    for start in range(0, len(ranked), _LOAD_CHUNK):
        chunk = ranked[start : start + _LOAD_CHUNK]
        items = MemoryItem.objects.using(alias).in_bulk([pk for pk, _ in chunk])
        for pk, score in chunk:
            item = items.get(pk)  # gone since the ranking read it: skipped
            if item is not None and (not rest or filters.value_matches(item.value, rest)):
                found.append(MemoryHit(item=item, score=score))
        if len(found) >= wanted:
            break
    return found[offset:wanted] if rest else found[:limit]


def _namespace_matches(labels: tuple[str, ...], path: list[str], *, suffix: bool) -> bool:
    if len(labels) < len(path):
        return False
    pairs = zip(reversed(labels), reversed(path), strict=False) if suffix else zip(labels, path, strict=False)
    return all(wanted in (WILDCARD, label) for label, wanted in pairs)


def memory_namespaces(
    *,
    tenant: Tenant,
    prefix: list[str] | None,
    suffix: list[str] | None,
    max_depth: int | None,
    limit: int,
    offset: int,
) -> list[list[str]]:
    """The namespaces that hold live items, cut to ``max_depth`` labels, in order."""
    rows = live_items(tenant=tenant)
    if prefix:
        fixed = list(prefix[: prefix.index(WILDCARD)] if WILDCARD in prefix else prefix)
        rows = under_prefix(rows, fixed)
    found: set[tuple[str, ...]] = set()
    texts: Iterator[str] = rows.values_list("namespace", flat=True).distinct().order_by().iterator()
    for text in texts:
        labels = tuple(namespace_labels(text))
        if prefix and not _namespace_matches(labels, prefix, suffix=False):
            continue
        if suffix and not _namespace_matches(labels, suffix, suffix=True):
            continue
        found.add(labels[:max_depth] if max_depth is not None else labels)
    return [list(labels) for labels in sorted(found)[offset : offset + limit]]


def subject_memory_export(*, tenant: Tenant, user_id: str) -> Iterator[dict[str, Any]]:
    """The person's items (expired ones not yet swept included: they are still held), read in
    batches bounded by bytes (``agentstate.streaming``), each batch's parts at once."""
    rows = MemoryItem.objects.filter(tenant=tenant, user_id=user_id).order_by("namespace", "key")
    for item in streaming.rows_in_batches(rows, size=streaming.stored_size(MemoryItem, "value"), prepare=items_parts):
        sources, vectors = item.parts  # items_parts'
        expires_at = item.expires_at.isoformat() if item.expires_at else None
        found = {"vectors": vectors} if vectors else {}
        yield {**item_data(item), "expires_at": expires_at, "sources": sources, **found}


def memory_items_kept_for_review(tenant_pk: int | None = None) -> QuerySet[MemoryItem]:
    """Items the memory policy kept when the last session they were made from was deleted
    (``MemoryPolicy.keep_derived``: a source marked ``session_deleted``), for staff to review."""
    rows = MemoryItem.objects.filter(pk__in=MemorySource.objects.filter(session_deleted=True).values("item"))
    return rows.filter(tenant_id=tenant_pk) if tenant_pk is not None else rows


def memory_items_expired_held() -> int:
    """Expired items a legal hold keeps from ``memory_items_expire`` (its report)."""
    return MemoryItem.objects.filter(rows_held(MemoryItem), expires_at__lte=timezone.now()).count()
