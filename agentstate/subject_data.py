"""What the service holds about people, declared once, and everything that follows from it.

Each app declares, for every model that holds a person's data, one ``SubjectData``: its category
(the name a preview, a receipt and the retention report use), which erasure scope covers it, how
its rows reach a person — their own ``(tenant, user_id)`` columns, or a foreign key to a declared
row that has them (a session's messages) — and how they are exported. Erasure (what it deletes,
in which order, which admin-log entries it scrubs), its preview counts, the residue check that
rolls an erasure back, the tables whose storage is cleaned after it, the re-application after a
restore, the subject export and the labels staff read are all derived here from that one map, in
the style of Zulip's export tables and Sentry's deletion registry. ``check_declared`` (a system
check, run by the test suite) refuses a model with a user id, or a foreign key to declared data,
that is neither declared nor listed as not personal with a reason.

The platform defines the map and its derivations; the apps (and the framework backends in them)
register their part from their ``AppConfig.ready``, so this module imports no app.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.core import checks
from django.db import models
from django.db.models.deletion import Collector

from agentstate.exceptions import Held, InvalidInput
from agentstate.holds.selectors import held as held_by
from agentstate.holds.selectors import held_reference
from agentstate.holds.services import holds_lock
from agentstate.subjects import PROCESS_STATE, USER_DATA
from agentstate.validation import clean_identifier, identifier_visible

if TYPE_CHECKING:
    from agentstate.search.engine import TextIndex
    from agentstate.tenancy.models import Tenant

KINDS = (USER_DATA, PROCESS_STATE)  # the order an erasure takes them in


@dataclass(frozen=True)
class Export:
    """A top-level part of the subject export: ``rows(tenant=, user_id=)`` gives its JSON-ready
    items (an iterator read in batches bounded by bytes), under ``key``."""

    key: str
    rows: Callable[..., Iterable[Any]]


@dataclass(frozen=True)
class ExportedWith:
    """The rows are exported inside another declaration's part (``key``): a user's ADK event deltas
    with that user's ADK state, a session's messages with the session."""

    key: str


@dataclass(frozen=True)
class Portable:
    """How the rows travel in the portable format (``agentstate.portable``, docs/PORTABLE_FORMAT.md).

    ``record`` names the row's type in the file; ``order`` is its stable order (within its session
    for a session's rows); ``key`` the columns that find a row that carries its person again in a
    tenant (an import skips what is held). ``refs`` names integer columns that hold a declared
    root's primary key (written as the root's ``key``). ``encode`` and ``decode`` adjust a row's
    fields (an artifact's bytes in place of its storage name), and ``discard`` undoes what a
    ``decode`` stored outside the database when its row is not written; ``read`` and ``write``
    replace the table for data kept outside it (working state), given the row it hangs off.
    ``after(row, record)`` writes what a record carries beside its row's columns, once the row is
    created (a memory's sources and vectors, its parts: ``register_part``); ``batch(rows)`` reads
    them for ``encode``, a batch of rows at once (a few queries, not some per row; a model with text,
    JSON or binary columns, read in batches). ``checks`` names the
    API's validator (``agentstate.validation``'s, or a service's cleaner) of columns with a rule of
    their own, so an import refuses what the API refuses; every record's ``user_id`` is an
    identifier, and every value JSON the API takes (``agentstate.portable``)."""

    record: str
    order: tuple[str, ...] = ("id",)
    key: tuple[str, ...] = ()
    refs: dict[str, str] = dataclass_field(default_factory=dict)
    encode: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None
    decode: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    discard: Callable[[dict[str, Any]], None] | None = None
    read: Callable[[Any], Iterable[dict[str, Any]]] | None = None
    write: Callable[[Any, dict[str, Any]], None] | None = None
    after: Callable[[Any, dict[str, Any]], None] | None = None
    batch: Callable[[list[Any]], None] | None = None
    checks: dict[str, Callable[..., Any]] = dataclass_field(default_factory=dict)


@dataclass(frozen=True)
class DerivedFrom:
    """Rows made from sessions (a memory item from the conversations it was learnt in). ``link``
    is the model whose rows name a row's source session by a foreign key with
    ``on_delete=derived_cascade``; ``on_source_deleted(collector, field, links, using)`` decides, in
    the session delete's own collection and transaction, what goes with the session (the rows
    made only from it) and what stays. Every way a session is deleted (the API, a framework's
    delete, retention, erasure) is a Django delete, so each reaches it, and a dry run counts it.
    ``kept(tenant_pk)``: the rows a policy kept when their last source went, waiting for review
    (the admin's review list; a session's page links it)."""

    link: type[models.Model]
    on_source_deleted: Callable[..., None]
    kept: Callable[[int], models.QuerySet] | None = None


def derived_cascade(collector: Any, field: Any, sub_objs: Any, using: str) -> None:
    """``on_delete`` of a ``DerivedFrom.link``'s session: its declaration's ``on_source_deleted``."""
    for d in _declared.values():
        if d.derived_from is not None and d.derived_from.link is field.model:
            d.derived_from.on_source_deleted(collector, field, sub_objs, using)
            return
    models.CASCADE(collector, field, sub_objs, using)


@dataclass(frozen=True)
class SubjectData:
    """One model that holds a person's data.

    ``via`` empty: the rows carry the person's ``(tenant, user_id)``; ``existed`` then names the
    column an erasure re-applied after a restore compares with its own time (what was written
    since is the person's new data). ``via`` a foreign key: the rows belong to the person of the
    declared row it points to, and exist while it does (the session is the unit). ``count_roots``
    and ``erase_roots`` replace the table's own count and delete for data kept outside it (working
    state in Redis): they take the primary keys of the subject's rows ``via`` points to.
    ``hangs_off``: rows that carry their own person and yet hang off a row others point to by
    ``via`` (a session's artifacts, its events' ``user:`` deltas) name that row's primary key in
    this column (a foreign key or an integer), so a hold on it covers them (``rows_held``).
    ``part`` tells the root's exporter how to export the rows (the session app's session parts),
    ``retention`` says which retention rule removes process state's rows besides their session's
    deletion (the session app's ``AgesWithMessages``, or the rule's name), or why none does.
    ``text_index`` is the full-text index the database keeps of the rows (``agentstate.search``):
    its entries go with the rows, in their transaction; the storage clean-up after an erasure
    compacts it, so that no erased word stays in its pages. ``portable`` says how the rows travel
    in the portable format. ``derived_from``: the rows are made from sessions, and a session's
    deletion reaches them (``DerivedFrom``).
    """

    model: type[models.Model]
    category: str
    kind: str
    label: str = ""
    via: str = ""
    hangs_off: str = ""
    existed: str = ""
    export: Export | ExportedWith | None = None
    part: Any = None
    retention: Any = None
    count_roots: Callable[[list[Any]], int] | None = None
    erase_roots: Callable[[list[Any]], int] | None = None
    text_index: TextIndex | None = None
    portable: Portable | None = None
    derived_from: DerivedFrom | None = None

    @property
    def root(self) -> type[models.Model]:
        """The model whose rows carry the person: the model itself, or the one ``via`` points to."""
        if not self.via:
            return self.model
        related = self.model._meta.get_field(self.via).related_model
        assert isinstance(related, type)  # noqa: S101 (narrows the type: a resolved relation's model is a class)
        return related


_declared: dict[type[models.Model], SubjectData] = {}
_not_personal: dict[str, str] = {}
_parts: dict[type[models.Model], tuple[type[models.Model], str]] = {}


def register(*declarations: SubjectData) -> None:
    """Declare models that hold people's data (from an app's ``AppConfig.ready``)."""
    for declaration in declarations:
        if declaration.kind not in KINDS:
            raise ValueError(f"{declaration.model.__name__}: kind must be one of {KINDS}.")
        _declared[declaration.model] = declaration


def register_part(model: type[models.Model], *, of: type[models.Model], what: str) -> None:
    """A model whose rows are parts of a declared model's rows, personal as those are (a memory's
    vectors, made from the person's text; its sources): erased with their row by the cascade of
    their foreign key to it (the storage clean-up and the residue check reach their table,
    ``subject_tables``), exported and carried in its record. ``what`` says what they hold."""
    _parts[model] = (of, what)


def register_not_personal(model_label: str, reason: str) -> None:
    """A model that has a user id or points at people's data, but holds nothing of a person that
    erasure or export must reach, and why (the completeness check accepts it)."""
    _not_personal[model_label] = reason


def declared(*kinds: str) -> list[SubjectData]:
    """The declarations of these kinds (default: all): user data first, then in registration order."""
    return sorted((d for d in _declared.values() if not kinds or d.kind in kinds), key=lambda d: KINDS.index(d.kind))


def declaration_of(model: type[models.Model]) -> SubjectData | None:
    return _declared.get(model)


def categories(*kinds: str) -> tuple[str, ...]:
    """The categories of these kinds, each once, in the order people read them."""
    return tuple(dict.fromkeys(d.category for d in declared(*kinds)))


def category_label(category: str) -> str:
    """The one name of a category wherever people read it: the preview, the receipt, the
    erasure's history and messages, the commands."""
    for d in _declared.values():
        if d.category == category and d.label:
            return d.label
    return category.replace("_", " ")


def counted(counts: dict[str, int]) -> list[tuple[str, int]]:
    """The categories a count found rows in, by label, in the map's order: what staff read of any
    count (receipts, previews, banners, messages, the history, ``erase_user``). The zeros are left
    out: sixteen categories of which two hold rows read as those two."""
    return [(category_label(category), n) for category, n in counts.items() if n]


def counts_text(counts: dict[str, int]) -> str:
    """``{"user_data": 2, "memories": 0, "messages": 6}`` as people read it: "2 user data, 6
    messages" (``counted``); "nothing" when every count is zero."""
    return ", ".join(f"{n} {label}" for label, n in counted(counts)) or "nothing"


# --- One subject's rows ------------------------------------------------------------------------


def _hold_lookups(model: type[models.Model]) -> tuple[str, str, str | None]:
    """How a row of the declared model reaches what a hold names, by the map's ``via`` chain: the
    lookups of its tenant, its person, and the session it is or hangs off (``via``, ``hangs_off``)."""
    declaration = _declared[model]
    if declaration.via:
        return f"{declaration.via}__tenant", f"{declaration.via}__user_id", declaration.via
    is_root = any(d.via and d.root is model for d in _declared.values())
    return "tenant", "user_id", "pk" if is_root else declaration.hangs_off or None


def derived_fields(model: type[models.Model]) -> tuple[type[models.Model], str, str]:
    """A ``derived_from`` declaration's link model and its fields: the one naming the derived row,
    and its session."""
    derived = _declared[model].derived_from
    assert derived is not None  # noqa: S101 (only asked of a declaration with derived_from)
    fields = derived.link._meta.concrete_fields
    row = next(f.name for f in fields if f.is_relation and f.related_model is model)
    source = next(f.name for f in fields if getattr(f.remote_field, "on_delete", None) is derived_cascade)
    return derived.link, row, source


def rows_derived_from(model: type[models.Model], session_pk: int) -> models.QuerySet:
    """The rows of a declared model made from the session (its memories): the admin's links."""
    link, row, source = derived_fields(model)
    links = link._default_manager.filter(**{source: session_pk})
    return model._default_manager.filter(pk__in=links.values(row))


def derived_forget(session_pks: list[int], *, using: str = "default") -> int:
    """Inside the caller's transaction: what was made from these sessions is forgotten as their
    deletion would forget it (``DerivedFrom.on_source_deleted``: the rows made only from them, or
    kept for review), the sessions staying (a conversation cleared: the Agents SDK's
    ``clear_session``). How many rows went."""
    collector = Collector(using=using)
    for d in declared():
        if d.derived_from is None:
            continue
        link, _, source = derived_fields(d.model)
        links = list(link._default_manager.using(using).filter(**{f"{source}__in": session_pks}))
        if links:
            d.derived_from.on_source_deleted(collector, link._meta.get_field(source), links, using)
    return collector.delete()[0]


def rows_held(model: type[models.Model]) -> models.Exists | models.Q:
    """Whether a legal hold (``agentstate.holds``) covers a row of the declared model: a hold on
    its tenant or person, or on the session it is or hangs off (a session hold covers the session
    and everything that hangs off it), or on a session it was made from (``derived_from``). The
    one rule every deletion applies to every category: erasure, retention's sweeps, the memories'
    TTL, and the API's deletes (``rows_hold_check``)."""
    tenant, user_id, session = _hold_lookups(model)
    held = held_by(tenant=tenant, user_id=user_id, session=session)
    derived = _declared[model].derived_from
    if derived is None:
        return held
    link, row, source = derived_fields(model)
    links = link._default_manager.filter(**{row: models.OuterRef("pk")}).filter(
        held_by(tenant=f"{row}__tenant", user_id=f"{row}__user_id", session=source)
    )
    return models.Q(held) | models.Q(models.Exists(links))


def rows_hold_check(rows: models.QuerySet, *, tenant_pk: int, what: str) -> None:
    """Inside the transaction that deletes these rows of a declared model (of one tenant), before it
    does: take the tenant's hold lock and refuse (``Held``, with the hold's reference) while a hold
    covers any of them."""
    holds_lock(tenant_pk=tenant_pk, exclusive=False)
    tenant, user_id, session = _hold_lookups(rows.model)
    reference = (
        rows.annotate(hold_reference=held_reference(tenant=tenant, user_id=user_id, session=session))
        .filter(hold_reference__isnull=False)
        .values_list("hold_reference", flat=True)
        .first()
    )
    if reference is not None:
        raise Held.of(reference, what=what)


def subject_rows(
    declaration: SubjectData,
    *,
    tenant: Tenant,
    user_id: str,
    existed_at: datetime | None = None,
    held: bool | None = None,
) -> models.QuerySet:
    """The subject's rows of one declared model; with ``existed_at``, only what existed then; with
    ``held``, only the rows a legal hold covers (True) or does not (False)."""
    if declaration.via:
        root = _declared[declaration.root]
        roots = subject_rows(root, tenant=tenant, user_id=user_id, existed_at=existed_at, held=held)
        return declaration.model._default_manager.filter(**{f"{declaration.via}__in": roots.values("pk")})
    rows = declaration.model._default_manager.filter(tenant=tenant, user_id=user_id)
    if existed_at is not None and declaration.existed:
        rows = rows.filter(**{f"{declaration.existed}__lte": existed_at})
    if held is not None:
        rows = rows.filter(rows_held(declaration.model)) if held else rows.exclude(rows_held(declaration.model))
    return rows


def subject_counts(
    *,
    tenant: Tenant,
    user_id: str,
    kinds: Iterable[str],
    existed_at: dict[str, datetime | None] | None = None,
    held: bool | None = None,
) -> dict[str, int]:
    """Rows per category of these kinds held about the subject (with ``existed_at`` per kind: what
    existed then; with ``held``: only what legal holds cover, or only what they do not). One query
    per declared model, whatever the data size."""
    counts: Counter[str] = Counter()
    for kind in kinds:
        when = (existed_at or {}).get(kind)
        for d in declared(kind):
            counts[d.category] += 0
            if d.count_roots is not None:
                roots = subject_rows(_declared[d.root], tenant=tenant, user_id=user_id, existed_at=when, held=held)
                counts[d.category] += d.count_roots(list(roots.values_list("pk", flat=True)))
            else:
                counts[d.category] += subject_rows(
                    d, tenant=tenant, user_id=user_id, existed_at=when, held=held
                ).count()
    return dict(counts)


def subject_id_check(*, tenant: Tenant, user_id: str) -> str:
    """A user id staff typed (a request's subject, a hold's person), exactly as typed; one that
    begins or ends with whitespace is taken only when data is held under it ("ada " is another
    person than "ada", but usually a slip)."""
    user_id = clean_identifier(user_id, field="user_id")
    if user_id == user_id.strip() or any(subject_counts(tenant=tenant, user_id=user_id, kinds=KINDS).values()):
        return user_id
    shown, where = identifier_visible(user_id), f"nothing is held under it in tenant {tenant.slug}"
    if not user_id.strip():
        raise InvalidInput.for_field("user_id", f"{shown} is only spaces and {where}: type the person's user id.")
    raise InvalidInput.for_field(
        "user_id",
        f"{shown} begins or ends with a space and {where}: type it without the space "
        f"({identifier_visible(user_id.strip())}).",
    )


def subject_erase(
    *,
    tenant: Tenant,
    user_id: str,
    kinds: Iterable[str],
    existed_at: dict[str, datetime | None] | None = None,
    before_delete: Callable[[models.QuerySet], None] = lambda rows: None,
) -> dict[str, int]:
    """Delete the subject's rows of every model of these kinds; counts per category. Inside the
    caller's transaction: the tenant's hold lock first, then the rows other rows hang off
    (sessions) are locked, so a write running against them finishes before and one that starts
    later finds them gone; the rows that hang off them go before them. ``before_delete`` sees each
    queryset first (the admin log is scrubbed of it). What legal holds cover stays (``rows_held``).
    The rows made only from deleted sessions (``derived_from``) are counted in their category.
    Bulk deletes: a fixed number of statements whatever the number of rows."""
    holds_lock(tenant_pk=tenant.pk, exclusive=False)
    counts: Counter[str] = Counter()
    for kind in kinds:
        when = (existed_at or {}).get(kind)
        kind_declared = declared(kind)
        roots = {d.root for d in kind_declared if d.via}
        locked = {
            root: list(
                subject_rows(_declared[root], tenant=tenant, user_id=user_id, existed_at=when, held=False)
                .select_for_update()
                .values_list("pk", flat=True)
            )
            for root in roots
        }
        for d in sorted(kind_declared, key=lambda d: d.model in roots):  # what hangs off first
            counts[d.category] += 0
            if d.erase_roots is not None:
                counts[d.category] += d.erase_roots(locked[d.root])
                continue
            rows = subject_rows(d, tenant=tenant, user_id=user_id, existed_at=when, held=False)
            before_delete(rows)
            deleted = rows.delete()[1]  # only this model's rows: cascades are counted by their own
            counts[d.category] += deleted.get(d.model._meta.label, 0)
            for made in declared():  # and what was made only from them (a session's memories)
                if made.derived_from is not None and made is not d:
                    counts[made.category] += deleted.get(made.model._meta.label, 0)
    return dict(counts)


def subject_tables(*kinds: str) -> list[str]:
    """The tables an erasure of these kinds deletes from (their storage is cleaned after it): each
    declared model's, and those its deletes cascade into (a memory's vectors and sources), whose
    rows held the person's data as much as the row they hung off."""
    tables: dict[str, None] = {}
    for d in declared(*kinds):
        tables[d.model._meta.db_table] = None
        for relation in d.model._meta.related_objects:
            if relation.on_delete is not models.DO_NOTHING and relation.related_model is not None:
                tables[relation.related_model._meta.db_table] = None
    return list(tables)


def subject_text_indexes(*kinds: str) -> list[TextIndex]:
    """The full-text indexes of the rows an erasure of these kinds deletes (compacted after it)."""
    return [d.text_index for d in declared(*kinds) if d.text_index is not None]


def subject_ids() -> Iterator[tuple[str, str]]:
    """Every ``(tenant slug, user_id)`` the data holds, once per model that carries it (re-applying
    erasures after a restore hashes each)."""
    for d in declared():
        if not d.via:
            yield from d.model._default_manager.values_list("tenant__slug", "user_id").distinct().order_by().iterator()


def subject_export_parts(*, tenant: Tenant, user_id: str) -> dict[str, Iterable[Any]]:
    """The subject's part of the export, by key, from every declaration exported on its own."""
    return {
        d.export.key: d.export.rows(tenant=tenant, user_id=user_id) for d in declared() if isinstance(d.export, Export)
    }


# --- The completeness check --------------------------------------------------------------------


def needs_declaring(model: type[models.Model]) -> bool:
    """A model holds people's data when its rows carry a user id or point at declared data."""
    for field in model._meta.get_fields():
        if field.name == "user_id" and not field.is_relation:
            return True
        points_at_declared = field.related_model in _declared and field.related_model is not model
        if field.concrete and (field.many_to_one or field.one_to_one) and points_at_declared:
            return True
    return False


def undeclared(candidates: Iterable[type[models.Model]]) -> list[str]:
    """Models among ``candidates`` that hold people's data and are neither declared nor listed as
    not personal."""
    return [
        model._meta.label
        for model in candidates
        if not model._meta.abstract
        and not model._meta.proxy
        and not model._meta.auto_created
        and model not in _declared
        and model not in _parts
        and model._meta.label not in _not_personal
        and needs_declaring(model)
    ]


def incomplete() -> list[str]:
    """Declarations that cannot be derived from: an export missing, ``via`` to undeclared data."""
    problems = []
    exported = {d.export.key for d in declared() if isinstance(d.export, Export)}
    for d in declared():
        name = d.model._meta.label
        if d.export is None:
            problems.append(f"{name} declares no export.")
        if d.portable is None:
            problems.append(f"{name} declares no portable record (docs/PORTABLE_FORMAT.md).")
        elif d.portable.key and d.via:
            problems.append(f"{name} hangs off a session: its portable record is found by its session, not a key.")
        elif isinstance(d.export, ExportedWith) and d.export.key not in exported:
            problems.append(f"{name} is exported with {d.export.key!r}, which no declaration exports.")
        if d.via and d.root not in _declared:
            problems.append(f"{name} hangs off {d.root._meta.label}, which is not declared.")
        if d.via and _declared.get(d.root, d).via:
            problems.append(f"{name} hangs off {d.root._meta.label}, which itself hangs off another model.")
        if d.kind == PROCESS_STATE and d.retention is None:
            problems.append(f"{name} says nothing of retention (the rule that removes its rows, or why none does).")
        if d.hangs_off and d.via:
            problems.append(f"{name} names both via and hangs_off: its rows hang off their session one way.")
        if (d.count_roots is None) != (d.erase_roots is None):
            problems.append(f"{name} counts and erases its rows in different places.")
    for part, (whole, _) in _parts.items():
        cascades = [
            f
            for f in part._meta.concrete_fields
            if f.related_model is whole and getattr(f.remote_field, "on_delete", None) is models.CASCADE
        ]
        if whole not in _declared or not cascades:
            problems.append(f"{part._meta.label} is a part of {whole._meta.label}: it must be declared and cascade.")
    return problems


def check_declared(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """System check: every model that holds people's data is declared (or listed as not personal,
    with a reason), and every declaration can be erased and exported."""
    models_to_check = [m for config in app_configs for m in config.get_models()] if app_configs else apps.get_models()
    errors: list[checks.CheckMessage] = [
        checks.Error(
            f"{label} holds people's data (a user id, or a key to declared data) but is not declared.",
            hint="Declare it with agentstate.subject_data.register (docs/DESIGN.md, "
            "'Adding a model that holds personal data'), or list it with register_not_personal and a reason.",
            id="agentstate.E001",
        )
        for label in undeclared(models_to_check)
    ]
    errors += [checks.Error(problem, id="agentstate.E002") for problem in incomplete()]
    return errors
