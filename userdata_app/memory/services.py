"""A batch of store operations (LangGraph's ``BaseStore.batch``) in one transaction, and the sweep
of expired items.

The attribution rule: an item is stored only under a namespace that names its person,
``("users", <user_id>, ...)`` (the user id's "%" and "." written "%25" and "%2E"); any other
namespace is refused (a 400), so every item is the user data of one ``(tenant, user_id)`` and
erasure and export reach it. Reads and deletes take any
namespace (they find nothing outside the rule). As LangGraph's own stores do, the reads of a batch
see the data as it was before the batch, and its writes are applied after them, the last write of
an item winning. A put may be conditional (``only_if``: "absent" stores only where no live item
has the key, "present" only where one has), decided in the same transaction: ADK's memory service
adds events without overwriting what was remembered or forgotten. A forget empties a live item and
keeps its key (ADK's ``delete_memory``: the memory does not come back with its session): it destroys
the content, so a legal hold refuses it as it refuses a delete, while a put (a write) goes on.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from agentstate import search
from agentstate.exceptions import InvalidInput, NotFound, PersonKeyRefused
from agentstate.holds.services import hold_check, holds_lock
from agentstate.subject_data import rows_held
from agentstate.subjects import USER_DATA, subject_write_check
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_json
from sessions_app.backends import thread_session_pk
from sessions_app.selectors.sessions import session_get
from userdata_app.memory import filters, selectors, vectors
from userdata_app.memory.models import (
    KEY_MAX_LENGTH,
    NAMESPACE_MAX_LENGTH,
    MemoryItem,
    MemoryPolicy,
    MemorySource,
    MemoryVector,
)
from userdata_app.memory.selectors import SOURCE_COLUMNS

MAX_OPS = 1000
MAX_LIMIT = 1000
MAX_OFFSET = 2**31 - 1
MAX_TTL_MINUTES = 100 * 365 * 24 * 60  # a century: beyond it, no expiry means the same
ABSENT, PRESENT = "absent", "present"
CONDITIONS = (ABSENT, PRESENT)  # a put's only_if
FORGOTTEN = {"forgotten": True}  # a forgotten item's value: its key kept, its content gone
MAX_SOURCES = 100  # a put's sources
MAX_NAMESPACE_DEPTH = NAMESPACE_MAX_LENGTH // 2  # a label and a "." at least: the deepest owner position
THREAD_ID_MAX_LENGTH = 4096  # a source's LangGraph thread id


def _field(i: int, name: str) -> str:
    return f"ops[{i}].{name}"


def _text(value: Any, *, field: str, max_length: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput.for_field(field, "must be a string.")
    if len(value) > max_length:
        raise InvalidInput.for_field(field, f"must be at most {max_length} characters.")
    clean_json(value, field=field)  # no NUL, no lone surrogate
    return value


def _namespace(value: Any, *, field: str, wildcards: bool = False) -> list[str]:
    if not isinstance(value, list):
        raise InvalidInput.for_field(field, "must be a list of labels (strings).")
    for label in value:
        _text(label, field=field, max_length=NAMESPACE_MAX_LENGTH)
        if not label:
            raise InvalidInput.for_field(field, "labels must not be empty.")
        if selectors.SEPARATOR in label:
            raise InvalidInput.for_field(field, "labels must not contain '.'.")
    if len(selectors.namespace_text(value)) > NAMESPACE_MAX_LENGTH:
        raise InvalidInput.for_field(field, f"must be at most {NAMESPACE_MAX_LENGTH} characters, joined by '.'.")
    return value


def namespace_owner(namespace: list[str], *, field: str = "namespace", owner: int | None = None) -> str:
    """The person an item under ``namespace`` belongs to: the label at the ``owner`` position a
    put names (a store's rule: 1 for ``("memories", <user_id>)``, 0 for ``(<user_id>, "prefs")``),
    else the second label, the first being "users" (``selectors.user_label`` of the user id)."""
    if owner is not None:
        if owner >= len(namespace):
            raise InvalidInput.for_field(field, f"has no label at the owner position {owner}: it names no person.")
        return clean_identifier(selectors.label_user(namespace[owner]), field=field)
    if len(namespace) < 2 or namespace[0] != selectors.USERS:
        raise InvalidInput.for_field(
            field,
            'must start with "users" and the user id, as ["users", "<user_id>", ...]: '
            "every memory item belongs to one person.",
        )
    return clean_identifier(selectors.label_user(namespace[1]), field=field)


def _whole(value: Any, *, field: str, low: int, high: int, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput.for_field(field, f"must be a whole number from {low} to {high}.")
    return value


def _flag(value: Any, *, field: str) -> bool:
    if value is None:
        return True
    if not isinstance(value, bool):
        raise InvalidInput.for_field(field, "must be true or false.")
    return value


def _filter(value: Any, *, field: str) -> dict[str, Any] | None:
    if value is None:
        return None
    clean_json(value, field=field, require_object=True)

    def check(wanted: Any) -> None:
        if isinstance(wanted, dict) and any(name.startswith("$") for name in wanted):
            for name, operand in wanted.items():  # an operator object: operators only
                if name not in filters.OPERATORS:
                    raise InvalidInput.for_field(
                        field, f"unknown operator {name!r}: use one of {', '.join(sorted(filters.OPERATORS))}."
                    )
                ordered = name in filters.ORDER_OPERATORS
                if ordered and (isinstance(operand, bool) or not isinstance(operand, (int, float, str))):
                    raise InvalidInput.for_field(field, f"{name} compares with a number or a string.")
        elif isinstance(wanted, dict):
            for operand in wanted.values():
                check(operand)
        elif isinstance(wanted, list):
            for item in wanted:
                check(item)

    for wanted in value.values():
        check(wanted)
    return value


def _ttl(value: Any, *, field: str) -> float | None:
    if value is None:
        return None
    number_ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not number_ok or not 0 < value <= MAX_TTL_MINUTES:
        raise InvalidInput.for_field(field, f"must be null or minutes above 0, at most {MAX_TTL_MINUTES}.")
    return float(value)


def _op(i: int, op: Any) -> dict[str, Any]:
    fields = {
        "get": {"namespace", "key", "refresh_ttl", "with_sources"},
        "put": {"namespace", "key", "value", "ttl", "only_if", "sources", "vectors", "owner"},
        "forget": {"namespace", "key", "ttl"},
        "search": {"namespace_prefix", "filter", "limit", "offset", "query", "vector", "refresh_ttl", "with_sources"},
        "list_namespaces": {"prefix", "suffix", "max_depth", "limit", "offset"},
    }
    kind = op.get("op") if isinstance(op, dict) else None
    if not isinstance(kind, str) or kind not in fields:
        # What is no operation at all is judged whole first: not an object, not finite, too deep.
        clean_json(op, field=f"ops[{i}]", require_object=True)
        raise InvalidInput.for_field(_field(i, "op"), f"must be one of {', '.join(fields)}.")
    unknown = sorted(set(op) - fields[kind] - {"op"})
    if unknown:
        raise InvalidInput.for_field(_field(i, unknown[0]), f"is not a field of {kind}.")
    clean: dict[str, Any]
    if kind in ("get", "put", "forget"):
        clean = {
            "namespace": _namespace(op.get("namespace"), field=_field(i, "namespace")),
            "key": _text(op.get("key"), field=_field(i, "key"), max_length=KEY_MAX_LENGTH),
        }
        if kind == "get":
            refresh_ttl = _flag(op.get("refresh_ttl"), field=_field(i, "refresh_ttl"))
            return {"op": kind, **clean, "refresh_ttl": refresh_ttl, "with_sources": _with_sources(i, op)}
        if kind == "forget":  # a put of the forgotten value where a live item has the key
            ttl = _ttl(op.get("ttl"), field=_field(i, "ttl"))
            forget: dict[str, Any] = {"value": FORGOTTEN, "ttl": ttl, "only_if": PRESENT, "sources": [], "owner": None}
            return {"op": kind, **clean, **forget}
        value = op.get("value")
        owner = _whole(op.get("owner"), field=_field(i, "owner"), low=0, high=MAX_NAMESPACE_DEPTH, default=None)
        if value is not None:
            clean_json(value, field=_field(i, "value"), require_object=True)
            namespace_owner(clean["namespace"], field=_field(i, "namespace"), owner=owner)
        only_if = op.get("only_if")
        if only_if is not None and (only_if not in CONDITIONS or value is None):
            raise InvalidInput.for_field(
                _field(i, "only_if"), f"must be null or one of {', '.join(CONDITIONS)}, on a put with a value."
            )
        ttl = _ttl(op.get("ttl"), field=_field(i, "ttl"))
        sources = _sources(op.get("sources"), field=_field(i, "sources"), value=value)
        index = vectors.vectors_clean(op.get("vectors"), field=_field(i, "vectors"), stored=value is not None)
        return {
            "op": kind,
            **clean,
            "value": value,
            "ttl": ttl,
            "only_if": only_if,
            "sources": sources,
            "vectors": index,
            "owner": owner,
        }
    limits = {"limit": (0, MAX_LIMIT, 10 if kind == "search" else 100), "offset": (0, MAX_OFFSET, 0)}
    clean = {
        name: _whole(op.get(name), field=_field(i, name), low=low, high=high, default=default)
        for name, (low, high, default) in limits.items()
    }
    if kind == "search":
        query = op.get("query")
        vector = None
        if op.get("vector") is not None:  # a search by meaning: the query's words are not read
            vector = vectors.vector_clean(op["vector"], field=_field(i, "vector"))
            if not isinstance(query, str) or not query:
                raise InvalidInput.for_field(_field(i, "query"), "must be the text the vector embeds.")
            _text(query, field=_field(i, "query"), max_length=search.MAX_WORDS_QUERY_LENGTH)
        elif query is not None:
            _text(query, field=_field(i, "query"), max_length=search.MAX_WORDS_QUERY_LENGTH)
            if search.query_words(query):
                search.words_clean(query, field=_field(i, "query"))
            else:
                query = None  # no word at all (empty, punctuation): a search without a query
        return {
            "op": kind,
            **clean,
            "query": query,
            "vector": vector,
            "namespace_prefix": _namespace(op.get("namespace_prefix", []), field=_field(i, "namespace_prefix")),
            "filter": _filter(op.get("filter"), field=_field(i, "filter")),
            "refresh_ttl": _flag(op.get("refresh_ttl"), field=_field(i, "refresh_ttl")),
            "with_sources": _with_sources(i, op),
        }
    paths = {
        name: None if op.get(name) is None else _namespace(op.get(name), field=_field(i, name))
        for name in ("prefix", "suffix")
    }
    max_depth = _whole(op.get("max_depth"), field=_field(i, "max_depth"), low=1, high=MAX_OFFSET, default=None)
    return {"op": kind, **clean, **paths, "max_depth": max_depth}


def _with_sources(i: int, op: dict[str, Any]) -> bool:
    """Whether a read returns its items' sources: only when asked (false by default)."""
    return _flag(op.get("with_sources", False), field=_field(i, "with_sources"))


def _sources(sources: Any, *, field: str, value: Any) -> list[dict[str, str]]:
    """A put's sources (lineage): each a session, ``{"session_id", "app_name"}`` (ADK's, or the REST
    API's own with no app) or ``{"thread_id"}`` (LangGraph's), with a ``ref`` within it where known
    (an event's id, a message's seq, a checkpoint's id)."""
    if sources is None:
        return []
    if not isinstance(sources, list) or len(sources) > MAX_SOURCES:
        raise InvalidInput.for_field(field, f"must be a list of at most {MAX_SOURCES} sources.")
    if sources and value is None:
        raise InvalidInput.for_field(field, "must be empty on a delete (a put with no value).")
    clean = []
    for j, source in enumerate(sources):
        where = f"{field}[{j}]"
        if not isinstance(source, dict) or set(source) - set(SOURCE_COLUMNS):
            raise InvalidInput.for_field(where, f"must be an object of {', '.join(SOURCE_COLUMNS)}.")
        if bool(source.get("session_id")) == bool(source.get("thread_id")):
            raise InvalidInput.for_field(where, "must name one session: a session_id or a thread_id.")
        limits = {"thread_id": THREAD_ID_MAX_LENGTH}
        clean.append(
            {
                name: _text(source.get(name, ""), field=f"{where}.{name}", max_length=limits.get(name, KEY_MAX_LENGTH))
                if source.get(name, "") != ""
                else ""
                for name in SOURCE_COLUMNS
            }
        )
    return clean


def memory_ops_clean(ops: Any) -> list[dict[str, Any]]:
    """Every operation checked before any runs: one bad operation refuses the whole batch."""
    if not isinstance(ops, list):
        raise InvalidInput.for_field("ops", "must be a list of operations.")
    if len(ops) > MAX_OPS:
        raise InvalidInput.for_field("ops", f"must hold at most {MAX_OPS} operations.")
    return [_op(i, op) for i, op in enumerate(ops)]


def _refresh(items: list[MemoryItem], now) -> None:
    """Move the expiry of items with a TTL to ``ttl_minutes`` from now, one UPDATE per TTL."""
    by_ttl: dict[float, list[int]] = defaultdict(list)
    for item in items:
        if item.ttl_minutes is not None:
            by_ttl[item.ttl_minutes].append(item.pk)
    for ttl, pks in by_ttl.items():
        MemoryItem.objects.filter(pk__in=pks).update(expires_at=now + timedelta(minutes=ttl))


def _expires_at(op: dict[str, Any], now):
    return now + timedelta(minutes=op["ttl"]) if op["ttl"] is not None else None


def _write(tenant: Tenant, puts: dict[tuple[str, str], dict[str, Any]], now) -> None:
    stored = [op for op in puts.values() if op["value"] is not None and op["only_if"] != PRESENT]
    deleted = [
        MemoryItem.objects.filter(tenant=tenant, namespace=ns, key=key)
        for (ns, key), op in puts.items()
        if op["value"] is None
    ]
    forgotten = [
        selectors.live_items(tenant=tenant).filter(namespace=ns, key=key)
        for (ns, key), op in puts.items()
        if op["op"] == "forget"
    ]
    emptied = [row for rows in (*deleted, *forgotten) for row in rows.values_list("pk", "user_id")]
    for user_id in sorted({user_id for _, user_id in emptied}):  # the people whose items would go
        hold_check(tenant_pk=tenant.pk, user_id=user_id, what="this user's memories")
    sources = MemorySource.objects.filter(item__in=[pk for pk, _ in emptied], linked_session__isnull=False)
    for session_pk in sorted(set(sources.values_list("linked_session", flat=True))):  # a held session's memories
        hold_check(tenant_pk=tenant.pk, session_pk=session_pk, what="memories made from a held session")
    for rows in deleted:
        rows.delete()
    for (namespace, key), op in puts.items():
        if op["value"] is not None and op["only_if"] == PRESENT:
            selectors.live_items(tenant=tenant).filter(namespace=namespace, key=key).update(
                value=op["value"], updated_at=now, ttl_minutes=op["ttl"], expires_at=_expires_at(op, now)
            )
        elif op["value"] is not None and op["only_if"] == ABSENT:  # an expired item not yet swept is absent
            MemoryItem.objects.filter(tenant=tenant, namespace=namespace, key=key, expires_at__lte=now).delete()
    for user_id in sorted({namespace_owner(op["namespace"], owner=op["owner"]) for op in stored}):
        subject_write_check(tenant=tenant, user_id=user_id, category=USER_DATA)
    for only_if in (None, ABSENT):
        MemoryItem.objects.bulk_create(
            [
                MemoryItem(
                    tenant=tenant,
                    user_id=namespace_owner(op["namespace"], owner=op["owner"]),
                    namespace=selectors.namespace_text(op["namespace"]),
                    key=op["key"],
                    value=op["value"],
                    created_at=now,
                    updated_at=now,
                    ttl_minutes=op["ttl"],
                    expires_at=_expires_at(op, now),
                )
                for op in stored
                if op["only_if"] == only_if
            ],
            **(
                {"ignore_conflicts": True}
                if only_if == ABSENT
                else {
                    "update_conflicts": True,
                    "unique_fields": ["tenant", "namespace", "key"],
                    "update_fields": ["value", "updated_at", "ttl_minutes", "expires_at"],
                }
            ),
        )
    _sources_record(tenant, [op for op in puts.values() if op["value"] is not None])
    vectors.vectors_replace(tenant, [op for op in puts.values() if op["value"] is not None], now)


def _sources_record(tenant: Tenant, ops: list[dict[str, Any]]) -> None:
    """Add each put's sources to its item (a source it has already is kept once: ADK adds a
    session again as it grows). A source naming a session of the item's person kept here is linked
    to it, so that the session's deletion reaches the item (``models._derived_cascade``)."""
    ops = [op for op in ops if op["sources"]]
    if not ops:
        return
    # Two flat INs, not an OR per item (SQLite refuses an expression 1,000 ORs deep).
    namespaces = {selectors.namespace_text(op["namespace"]) for op in ops}
    stored = MemoryItem.objects.filter(tenant=tenant, namespace__in=namespaces, key__in={op["key"] for op in ops})
    items = {(i.namespace, i.key): i for i in stored.only("pk", "namespace", "key", "user_id")}
    sessions: dict[tuple[str, ...], int | None] = {}
    rows = []
    for op in ops:
        item = items.get((selectors.namespace_text(op["namespace"]), op["key"]))
        if item is None:  # a conditional put that stored nothing
            continue
        for source in op["sources"]:
            found = (item.user_id, source["app_name"], source["session_id"], source["thread_id"])
            if found not in sessions:
                sessions[found] = _source_session_pk(tenant, item.user_id, source)
            rows.append(MemorySource(item=item, linked_session_id=sessions[found], **source))
    MemorySource.objects.bulk_create(rows, ignore_conflicts=True)


def _source_session_pk(tenant: Tenant, user_id: str, source: dict[str, str]) -> int | None:
    """The person's session a source names, when it is kept here."""
    if source["thread_id"]:
        return thread_session_pk(tenant=tenant, thread_id=source["thread_id"], user_id=user_id)
    try:
        return session_get(
            tenant=tenant, user_id=user_id, session_id=source["session_id"], app_name=source["app_name"]
        ).pk
    except NotFound:
        return None


def memory_sources_session_deleted(collector: Any, field: Any, sub_objs: Any, using: str) -> None:
    """A session being deleted (``DerivedFrom``): its sources go with it, and so do the items left
    with no source (the memories made only from it), in the delete's own collection and
    transaction; where the tenant's memory policy keeps them, they stay for review, their sources
    unlinked and marked ``session_deleted``. A memory made from several sessions loses the deleted
    one and stays. An item deleted takes its sources itself, so none is collected twice (a dry run
    counts each once)."""
    gone = {source.pk for source in (*sub_objs, *collector.data.get(MemorySource, ()))}
    item_pks = {source.item_id for source in sub_objs}
    others = MemorySource.objects.using(using).filter(item__in=item_pks).exclude(pk__in=gone)
    orphans = MemoryItem.objects.using(using).filter(pk__in=item_pks).exclude(pk__in=others.values("item"))
    kept = MemoryPolicy.objects.using(using).filter(keep_derived=True).values("tenant")
    deleted = list(orphans.exclude(tenant__in=kept))
    doomed = {item.pk for item in deleted}
    reviewed = set(orphans.filter(tenant__in=kept).values_list("pk", flat=True))
    marked = [source for source in sub_objs if source.item_id in reviewed]
    going = MemorySource.objects.using(using).filter(
        pk__in=[s.pk for s in sub_objs if s.item_id not in doomed | reviewed]
    )
    models.CASCADE(collector, field, going, using)
    collector.collect(deleted, source=MemorySource, nullable=False)
    if marked:
        collector.add_field_update(field, None, marked)
        collector.add_field_update(MemorySource._meta.get_field("session_deleted"), True, marked)


def _search(tenant: Tenant, op: dict[str, Any]) -> list[tuple[MemoryItem, float | None]]:
    """A search op's items and scores: ranked by cosine similarity to the query's ``vector`` when it
    has one (``vectors``), else by the words of ``query`` when it has one (the items holding none
    are left out), else most recently updated first with no score."""
    scope = {"namespace_prefix": op["namespace_prefix"], "filter": op["filter"]}
    page = {"limit": op["limit"], "offset": op["offset"]}
    if op["query"] is None:
        return [(item, None) for item in selectors.memory_search(tenant=tenant, **scope, **page)]
    if op["vector"] is not None:
        return vectors.memory_vector_search(tenant=tenant, vector=op["vector"], **scope, **page)
    prefix = op["namespace_prefix"]
    user_id = selectors.label_user(prefix[1]) if len(prefix) >= 2 and prefix[0] == selectors.USERS else None
    hits = search.search_memories(tenant, user_id, op["query"], **scope, **page)
    return [(hit.item, hit.score) for hit in hits]


def _read(item: MemoryItem, op: dict[str, Any]) -> dict[str, Any]:
    """An item as a get or search returns it; marked for its sources when the op asks for them
    (``with_sources``: a client from before lineage builds LangGraph's ``Item`` of the fields it knew)."""
    return {**selectors.item_data(item), **({"_pk": item.pk} if op["with_sources"] else {})}


def _sources_attach(results: list[Any]) -> None:
    """Each item read with ``with_sources`` gets its sources (one query for the batch's items)."""
    read = [item for result in results if result for item in (result if isinstance(result, list) else [result])]
    read = [item for item in read if isinstance(item, dict) and "_pk" in item]
    sources = selectors.items_sources(item["_pk"] for item in read) if read else {}
    for item in read:
        item["sources"] = sources.get(item.pop("_pk"), [])


def memory_ops_confine(ops: list[dict[str, Any]], *, user_id: str) -> list[dict[str, Any]]:
    """A batch confined to one person (its ``user_id``; always a person key's own): each op's
    namespace or prefix within ``("users", <user_id>)``, a search or listing of every person
    narrowed to them, a put naming its ``owner`` position owned by them (``namespace_owner``);
    anything else is refused (403)."""
    user_id = clean_identifier(user_id, field="user_id")
    own = [selectors.USERS, selectors.user_label(user_id)]
    for i, op in enumerate(ops):
        name = {"search": "namespace_prefix", "list_namespaces": "prefix"}.get(op["op"], "namespace")
        if op.get("owner") is not None and namespace_owner(op[name], owner=op["owner"]) == user_id:
            continue
        labels = op[name] or []
        if name != "namespace" and labels == own[: len(labels)]:
            op[name] = labels = own  # every person's, or every namespace: this person's
        if labels[:2] != own:
            raise PersonKeyRefused(
                f"{_field(i, name)}: outside the batch's user_id.",
                fields={
                    _field(i, name): [
                        'must start with ["users", "<the batch\'s user_id>"], or name it at the put\'s owner position.'
                    ]
                },
            )
    return ops


@transaction.atomic
def memory_batch(*, tenant: Tenant, ops: Any, user_id: str | None = None) -> list[Any]:
    """Run a batch: the result of each operation in order (an item or null for a get, a list of
    items for a search, of namespaces for list_namespaces, null for a put or a forget). With
    ``user_id``, the batch is confined to that person (``memory_ops_confine``)."""
    cleaned = memory_ops_clean(ops)
    if user_id is not None:
        cleaned = memory_ops_confine(cleaned, user_id=user_id)
    now = timezone.now()
    results: list[Any] = []
    refreshed: list[MemoryItem] = []
    puts: dict[tuple[str, str], dict[str, Any]] = {}
    for op in cleaned:
        kind = op["op"]
        if kind == "get":
            item = (
                selectors.live_items(tenant=tenant)
                .filter(namespace=selectors.namespace_text(op["namespace"]), key=op["key"])
                .first()
            )
            if item is not None and op["refresh_ttl"]:
                refreshed.append(item)
            results.append(_read(item, op) if item is not None else None)
        elif kind == "search":
            hits = _search(tenant, op)
            if op["refresh_ttl"]:
                refreshed += [item for item, _ in hits]
            results.append([{**_read(item, op), "score": score} for item, score in hits])
        elif kind == "list_namespaces":
            results.append(
                selectors.memory_namespaces(
                    tenant=tenant,
                    prefix=op["prefix"],
                    suffix=op["suffix"],
                    max_depth=op["max_depth"],
                    limit=op["limit"],
                    offset=op["offset"],
                )
            )
        else:
            written = (selectors.namespace_text(op["namespace"]), op["key"])
            earlier = puts.pop(written, None)  # the last write wins
            if earlier is not None and (op["only_if"] or earlier["only_if"]):
                raise InvalidInput.for_field(
                    "ops", "a conditional put (only_if) or a forget cannot share its batch with a write of its item."
                )
            puts[written] = op
            results.append(None)
    _refresh(refreshed, now)
    _write(tenant, puts, now)
    _sources_attach(results)
    return results


@transaction.atomic
def memory_items_import(*, tenant: Tenant, namespace: list[str], items: list[dict[str, Any]]) -> None:
    """Store items brought from another store (``import_sessions``) with their own times, TTL and
    expiry, under the rules a put meets (the namespace names its person, the write guard); an item
    whose key the namespace holds already keeps what agentstate has. Each item: ``key``, ``value``,
    ``created_at``, ``updated_at``, ``ttl_minutes``, ``expires_at``."""
    namespace = _namespace(namespace, field="namespace")
    user_id = namespace_owner(namespace)
    rows = []
    for i, item in enumerate(items):
        field = f"items[{i}]"
        clean_json(item["value"], field=f"{field}.value", require_object=True)
        rows.append(
            MemoryItem(
                tenant=tenant,
                user_id=user_id,
                namespace=selectors.namespace_text(namespace),
                key=_text(item["key"], field=f"{field}.key", max_length=KEY_MAX_LENGTH),
                value=item["value"],
                created_at=item["created_at"],
                updated_at=item["updated_at"],
                ttl_minutes=_ttl(item["ttl_minutes"], field=f"{field}.ttl_minutes"),
                expires_at=item["expires_at"],
            )
        )
    subject_write_check(tenant=tenant, user_id=user_id, category=USER_DATA)
    MemoryItem.objects.bulk_create(rows, ignore_conflicts=True)


def memory_items_expire(*, batch_size: int = 1000) -> int:
    """Delete expired items in batches, each its own short transaction; how many went. Items a
    legal hold covers stay (``selectors.memory_items_expired_held`` counts them): a batch takes
    each tenant's hold lock before it chooses, so a hold placed before it looked is never swept."""
    removed = 0
    tenants = list(
        MemoryItem.objects.filter(expires_at__lte=timezone.now())
        .values_list("tenant_id", flat=True)
        .distinct()
        .order_by()
    )
    while True:
        with transaction.atomic():
            for tenant_pk in sorted(tenants):
                holds_lock(tenant_pk=tenant_pk, exclusive=False)
            pks = list(
                MemoryItem.objects.filter(expires_at__lte=timezone.now(), tenant_id__in=tenants)
                .exclude(rows_held(MemoryItem))
                .order_by("expires_at")
                .values_list("pk", flat=True)[:batch_size]
            )
            if not pks:
                return removed
            removed += MemoryItem.objects.filter(pk__in=pks, expires_at__lte=timezone.now()).delete()[0]


# --- The portable record of a memory: its parts (sources, vectors) carried in it ----------------

PARTS = ("sources", "vectors")


def memory_record_encode(item: MemoryItem, record: dict[str, Any]) -> dict[str, Any]:
    """A memory's portable record with its sources (``session_deleted`` where the policy kept it)
    and its vectors (numbers, as the API takes them), absent when it has none; its batch's parts
    read by ``selectors.items_parts``."""
    sources, vectors = item.parts  # type: ignore[attr-defined]
    return (
        record
        | ({"sources": sources} if sources else {})
        | ({"vectors": [{"path": path, "vector": vector} for path, vector in vectors.items()]} if vectors else {})
    )


def memory_record_decode(record: dict[str, Any]) -> dict[str, Any]:
    """The record's columns; its parts are checked as the API checks a put's (written by
    ``memory_record_parts_write`` once the item is)."""
    for name in PARTS:
        _record_parts(record.pop(name, None), name)
    return record


def _record_parts(value: Any, name: str) -> list[Any]:
    if name == "vectors":
        return vectors.vectors_clean(value, field=name, stored=True) or []
    if not isinstance(value, list | None):
        raise InvalidInput.for_field(name, "must be a list.")
    value = [dict(source) if isinstance(source, dict) else source for source in value or []]  # the record's own stay
    deleted = [isinstance(source, dict) and source.pop("session_deleted", False) is True for source in value]
    return list(zip(_sources(value, field=name, value={}), deleted, strict=True))


def memory_record_parts_write(item: MemoryItem, record: dict[str, Any]) -> None:
    """An imported memory's sources (linked to its person's session where the file brought it,
    unless the session was deleted already) and vectors."""
    rows = []
    for source, deleted in _record_parts(record.get("sources"), "sources"):
        session = None if deleted else _source_session_pk(item.tenant, item.user_id, source)
        rows.append(MemorySource(item=item, linked_session_id=session, session_deleted=deleted, **source))
    MemorySource.objects.bulk_create(rows, ignore_conflicts=True)
    found = _record_parts(record.get("vectors"), "vectors")
    MemoryVector.objects.bulk_create([MemoryVector(item=item, path=path, vector=data) for path, data in found])
