"""The portable format's records, derived from the map of people's data (docs/PORTABLE_FORMAT.md).

Every declared model says how its rows travel (``subject_data.Portable``); this module writes a
tenant's or a person's rows as JSON Lines records in a stable order, and reads them back into a
tenant. A session travels as a block: its record, then the records of every row that hangs off it
(or names it by ``refs``), written back in one transaction; other rows go in chunks of
``CHUNK_ROWS``, a transaction each. A session the tenant holds already is left as it is, and a row
found again by its ``key`` is skipped, so a re-run imports nothing twice. The registry and the key
ring are the user-data app's: this module names no app.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, models, transaction

from agentstate import streaming
from agentstate.exceptions import InvalidInput, SubjectErased
from agentstate.subject_data import SubjectData, declared
from agentstate.subjects import subject_write_check
from agentstate.tenancy.models import Tenant
from agentstate.validation import MAX_BODY_DEPTH, check_json_text_depth, clean_identifier, clean_json

FORMAT = "agentstate-portable"
VERSION = 1
CHUNK_ROWS = 500  # rows written per transaction outside a session's block


class PortableError(Exception):
    """A record the format does not allow, with the number of its line; ``committed`` is what an
    import had written before it (its sessions and chunks committed one by one)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.committed: PortableImportSummary | None = None
        self.registered = 0  # erased-subject registry entries the import wrote before its records


def line_of(record: dict[str, Any]) -> str:
    """One record as its line: keys sorted, no spaces, UTF-8 as is, so equal data gives equal bytes."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


def header(*, scope: str, tenant: Tenant, **more: Any) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "scope": scope, "tenant": tenant.slug, **more}


def header_check(number: int, record: dict[str, Any]) -> dict[str, Any]:
    """The header, or why this agentstate cannot read the file."""
    if record.get("format") != FORMAT:
        raise PortableError(number, f"not an {FORMAT} file (its first line names no format {FORMAT!r}).")
    if record.get("version") != VERSION:
        raise PortableError(
            number, f"format version {record.get('version')!r}; this agentstate reads version {VERSION} only."
        )
    if not isinstance(record.get("tenant"), str):
        raise PortableError(number, "the header names no tenant.")
    return record


def lines_read(lines: Iterator[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each line as ``(number, record)``; a line cut short, nesting deeper than a request body may
    (the parser would run out of stack) or not a JSON object stops the reading."""
    for number, line in enumerate(lines, 1):
        if not line.endswith("\n"):
            raise PortableError(number, "the line does not end (the file was cut short).")
        try:
            check_json_text_depth(line.encode(), field="line")
            record = json.loads(line)
        except InvalidInput as exc:
            raise PortableError(number, exc.message) from None
        except ValueError as exc:
            raise PortableError(number, f"not JSON ({exc}).") from None
        if not isinstance(record, dict):
            raise PortableError(number, "not a JSON object.")
        yield number, record


# --- Rows as records -----------------------------------------------------------------------------


def _spec(d: SubjectData) -> Any:
    assert d.portable is not None  # noqa: S101 (the system check refuses a declaration without one)
    return d.portable


def _roots() -> set[type[models.Model]]:
    """The models other declared rows hang off (sessions): each travels as a block."""
    return {d.root for d in declared() if d.via}


def _members(root: type[models.Model]) -> list[tuple[SubjectData, str]]:
    """The declarations whose rows travel in a root row's block, with the field that names it."""
    label = root._meta.label
    return [(d, d.via) for d in declared() if d.via and d.root is root] + [
        (d, name) for d in declared() if not d.via for name, target in _spec(d).refs.items() if target == label
    ]


def _columns(d: SubjectData) -> list[models.Field]:
    skip = {"tenant", d.via} | ({"user_id"} if d.via else set())
    return [f for f in d.model._meta.concrete_fields if not (f.primary_key or f.name in skip)]


def _related(f: models.Field) -> type[models.Model]:
    """The declared root a key column points at (a fork's parent, an artifact's ADK session)."""
    related = f.related_model
    assert isinstance(related, type)  # noqa: S101 (narrows the type: a resolved relation's model is a class)
    return related


def _root_key(model: type[models.Model], pk: Any) -> list[Any] | None:
    if pk is None:
        return None
    key = _spec(_declaration(model)).key
    return list(model._default_manager.filter(pk=pk).values_list(*key).get())


def _declaration(model: type[models.Model]) -> SubjectData:
    return next(d for d in declared() if d.model is model)


def _encode(d: SubjectData, row: models.Model, known: dict[str, Any] | None = None) -> dict[str, Any]:
    """The row as its record; ``known``: fields already written as keys (the block's session)."""
    spec = _spec(d)
    record: dict[str, Any] = {"category": d.category, "record": spec.record, **(known or {})}
    for f in _columns(d):
        value = getattr(row, f.attname)
        if f.name in record:
            continue
        if f.is_relation:
            value = _root_key(_related(f), value)
        elif f.name in spec.refs:
            value = _root_key(apps.get_model(spec.refs[f.name]), value)
        elif isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, bytes | memoryview):
            value = base64.b64encode(bytes(value)).decode()
        record[f.name] = value
    return spec.encode(row, record) if spec.encode else record


def _ordered(d: SubjectData, rows: models.QuerySet) -> Iterator[models.Model]:
    """The rows in their record order, read in batches bounded by bytes."""
    spec = _spec(d)
    large = [f.name for f in _columns(d) if isinstance(f, models.TextField | models.JSONField | models.BinaryField)]
    ordered = rows.order_by(*spec.order)
    if not large:
        return ordered.iterator(chunk_size=streaming.BATCH_ROWS)
    return streaming.rows_in_batches(ordered, size=streaming.stored_size(d.model, *large), prepare=spec.batch)


def records(*, tenant: Tenant, user_id: str | None = None) -> Iterator[dict[str, Any]]:
    """Every declared row of the tenant (or of one person in it) as records: each session with its
    block, then the other rows, each model in its own order. Holds about one batch in memory."""
    owner = {"tenant": tenant} | ({"user_id": user_id} if user_id is not None else {})
    roots = _roots()
    for d in declared():
        if d.model not in roots:
            continue
        members = _members(d.model)
        for root in _ordered(d, d.model._default_manager.filter(**owner)):
            yield _encode(d, root)
            key = [getattr(root, name) for name in _spec(d).key]  # the block's root, as its members name it
            for member, name in members:
                spec = _spec(member)
                if spec.read is not None:
                    for value in spec.read(root):
                        yield {"category": member.category, "record": spec.record, name: key, **value}
                    continue
                for row in _ordered(member, member.model._default_manager.filter(**{name: root.pk})):
                    yield _encode(member, row, {name: key})
    members_elsewhere = {m.model for root in roots for m, _ in _members(root)}
    for d in declared():
        if d.via or d.model in roots or d.model in members_elsewhere:
            continue
        for row in _ordered(d, d.model._default_manager.filter(**owner)):
            yield _encode(d, row)


# --- Records as rows -----------------------------------------------------------------------------


@dataclass
class PortableImportSummary:
    """What an import of a portable file did (``import_tenant``); ``import_sessions``' summary of a
    peer store's import is the importers' own."""

    records: int = 0
    sessions_created: int = 0
    sessions_present: int = 0  # held already: left as they are
    rows_created: int = 0  # rows outside sessions' blocks, and in the blocks of sessions created
    rows_present: int = 0
    refused_users: list[str] = field(default_factory=list)


class Records:
    """The file's records with one of look-ahead."""

    def __init__(self, items: Iterator[tuple[int, dict[str, Any]]]) -> None:
        self._items, self._next = items, next(items, None)

    def peek(self) -> tuple[int, dict[str, Any]] | None:
        return self._next

    def take(self) -> tuple[int, dict[str, Any]]:
        item, self._next = self._next, next(self._items, None)
        assert item is not None  # noqa: S101 (callers peek first)
        return item


def _by_record() -> dict[tuple[str, str], SubjectData]:
    return {(d.category, _spec(d).record): d for d in declared()}


def _declaration_of_record(number: int, record: dict[str, Any], known: dict) -> SubjectData:
    d = known.get((record.get("category"), record.get("record")))
    if d is None:
        raise PortableError(number, f"unknown record {record.get('record')!r} of category {record.get('category')!r}.")
    return d


def _root_pk(tenant: Tenant, model: type[models.Model], key: Any, number: int) -> Any:
    if key is None:
        return None
    names = _spec(_declaration(model)).key
    if not isinstance(key, list) or len(key) != len(names):
        raise PortableError(number, f"{key!r} is not a key of {model._meta.verbose_name} ({', '.join(names)}).")
    return (
        model._default_manager.filter(tenant=tenant, **dict(zip(names, key, strict=True)))
        .values_list("pk", flat=True)
        .first()
    )


def _decode(
    d: SubjectData, record: dict[str, Any], number: int, *, tenant: Tenant, dry_run: bool = False
) -> dict[str, Any]:
    """The record's column values, checked against the model's columns (none missing or unknown).
    A dry run does not look up the sessions a row names: it wrote none."""
    spec = _spec(d)
    try:
        values = spec.decode(dict(record)) if spec.decode else dict(record)
    except InvalidInput as exc:
        raise PortableError(number, f"{spec.record}.{exc.message}") from None
    except ValueError as exc:  # bytes not in base64, ...: the file's fault
        raise PortableError(number, f"{spec.record}: {exc}") from None
    try:
        return _checked(d, values, number, tenant=tenant, dry_run=dry_run)
    except BaseException:
        if spec.discard is not None:
            spec.discard(values)
        raise


def _checked(d: SubjectData, values: dict[str, Any], number: int, *, tenant: Tenant, dry_run: bool) -> dict[str, Any]:
    spec = _spec(d)
    columns = {f.name: f for f in _columns(d)}
    given = set(values) - {"category", "record"}
    if given != set(columns):
        missing, unknown = sorted(set(columns) - given), sorted(given - set(columns))
        raise PortableError(number, f"{spec.record}: fields missing {missing}, unknown {unknown}.")
    fields: dict[str, Any] = {}
    for name, f in columns.items():
        value = values[name]
        try:
            _value_check(spec, name, value)
            if dry_run and (f.is_relation or name in spec.refs):
                continue
            if f.is_relation:
                fields[f.attname] = _root_pk(tenant, _related(f), value, number)
                continue
            if name in spec.refs:
                value = _root_pk(tenant, apps.get_model(spec.refs[name]), value, number)
                if value is None:
                    raise PortableError(number, f"{name} names a session the tenant does not hold.")
            if value is None and not f.null:
                raise ValueError("may not be null")
            fields[f.attname] = f.to_python(value)
            if value is not None:
                f.run_validators(fields[f.attname])  # the column's own bounds (length, range)
        except PortableError:
            raise
        except ValidationError as exc:
            raise PortableError(number, f"{spec.record}.{name}: {' '.join(exc.messages)}") from None
        except InvalidInput as exc:  # what the API refuses
            raise PortableError(number, f"{spec.record}.{exc.message}") from None
        except Exception as exc:  # a value of the wrong type or shape: the file's fault, named
            raise PortableError(number, f"{spec.record}.{name}: {exc}") from None
    return fields


def _value_check(spec: Any, name: str, value: Any) -> None:
    """A column's value by the API's rules: JSON it takes (no NUL, lone surrogate, NaN or
    infinity; a document's nesting is bounded by its line's), a person's id an identifier, and
    the column's own rule where the declaration names one (``Portable.checks``)."""
    clean_json(value, field=name, max_depth=MAX_BODY_DEPTH)
    check = clean_identifier if name == "user_id" else spec.checks.get(name)
    if check is not None:
        check(value, field=name)


def records_import(
    *,
    tenant: Tenant,
    items: Iterator[tuple[int, dict[str, Any]]],
    refused: Callable[[str], bool],
    dry_run: bool = False,
    on_unit: Callable[[PortableImportSummary], None] = lambda summary: None,
) -> PortableImportSummary:
    """Write the records into ``tenant``: a session's block in one transaction, other rows in
    chunks; a person ``refused`` names (erased) is skipped and reported once. A bad record stops
    the import with its line, its block or chunk rolled back; what committed before it stays, and
    a re-run once the file is mended skips that."""
    summary, committed = PortableImportSummary(), PortableImportSummary()
    known, roots = _by_record(), _roots()
    members = {m.model: name for root in roots for m, name in _members(root)}
    stream = Records(items)
    try:
        while (ahead := stream.peek()) is not None:
            try:
                _unit_import(tenant, stream, known, roots, members, refused, summary, dry_run)
            except (IntegrityError, DataError) as exc:  # rows the checks let through but the tables refuse
                refusal = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise PortableError(
                    ahead[0], f"the database refused this session's block or chunk: {refusal}"
                ) from None
            committed = replace(summary, refused_users=list(summary.refused_users))
            on_unit(summary)
    except PortableError as exc:
        exc.committed = committed
        raise
    return summary


def _unit_import(
    tenant: Tenant,
    stream: Records,
    known: dict,
    roots: set[type[models.Model]],
    members: dict,
    refused: Callable[[str], bool],
    summary: PortableImportSummary,
    dry_run: bool,
) -> None:
    """The next session's block, or chunk of other rows, in its transaction."""
    number, record = stream.take()
    d = _declaration_of_record(number, record, known)
    if d.model in members or d.via:
        raise PortableError(number, f"a {_spec(d).record} record outside its session's block.")
    if d.model in roots:
        block = _block(stream, known, members, _root_key_of(d, record, number))
        with transaction.atomic():
            _session_import(tenant, d, number, record, block, refused, summary, dry_run)
        for _ in block:  # the block of a session left as it is, read to its end
            pass
        return
    chunk = [(number, record, d)]
    while len(chunk) < CHUNK_ROWS and (ahead := stream.peek()) is not None:
        ahead_d = _declaration_of_record(ahead[0], ahead[1], known)
        if ahead_d.model in roots or ahead_d.model in members or ahead_d.via:
            break
        chunk.append((*stream.take(), ahead_d))
    stored: list[Callable[[], None]] = []  # what to undo outside the database if it rolls back
    try:
        with transaction.atomic():
            for number, record, d in chunk:
                _row_import(tenant, d, number, record, refused, summary, dry_run, stored)
    except BaseException:
        for discard in stored:
            discard()
        raise


def _root_key_of(d: SubjectData, record: dict[str, Any], number: int) -> list[Any]:
    try:
        return [record[name] for name in _spec(d).key]
    except KeyError as exc:
        raise PortableError(number, f"{_spec(d).record}: field {exc} missing.") from None


def _block(
    stream: Records, known: dict, members: dict, key: list[Any]
) -> Iterator[tuple[int, dict[str, Any], SubjectData]]:
    """The records after a session's record that belong to it (they name it)."""
    while (ahead := stream.peek()) is not None:
        d = _declaration_of_record(ahead[0], ahead[1], known)
        if d.model not in members:
            return
        number, record = stream.take()
        if record.get(members[d.model]) != key:
            raise PortableError(number, f"a {_spec(d).record} record in the block of another session.")
        yield number, record, d


def _refused(user_id: str, refused: Callable[[str], bool], summary: PortableImportSummary) -> bool:
    if user_id in summary.refused_users:
        return True
    if refused(user_id):
        summary.refused_users.append(user_id)
        return True
    return False


def _session_import(
    tenant: Tenant,
    d: SubjectData,
    number: int,
    record: dict[str, Any],
    block: Iterator[tuple[int, dict[str, Any], SubjectData]],
    refused: Callable[[str], bool],
    summary: PortableImportSummary,
    dry_run: bool,
) -> None:
    summary.records += 1
    fields = _decode(d, record, number, tenant=tenant)
    user_id = fields["user_id"]
    if _refused(user_id, refused, summary):
        return
    key = _root_key_of(d, record, number)
    if _root_pk(tenant, d.model, key, number) is not None:
        summary.sessions_present += 1
        return
    summary.sessions_created += 1
    if dry_run:
        for number, record, member in block:
            if _spec(member).decode is None:
                _decode_member(tenant, member, record, number, dry_run=True)
            summary.records += 1
            summary.rows_created += 1
        return
    try:
        subject_write_check(tenant=tenant, user_id=user_id, category=d.kind)
    except SubjectErased:
        summary.sessions_created -= 1
        summary.refused_users.append(user_id)
        return
    try:
        with transaction.atomic():  # a savepoint: the insert alone fails when an agent won the race
            root = d.model._default_manager.create(tenant=tenant, **fields)
    except IntegrityError:
        if _root_pk(tenant, d.model, key, number) is None:  # not the session's key: the file's fault
            raise
        # Created by an agent since the check above: held already, left as it is, like the others.
        summary.sessions_created -= 1
        summary.sessions_present += 1
        return
    pending: list[models.Model] = []
    for number, record, member in block:
        summary.records += 1
        summary.rows_created += 1
        spec = _spec(member)
        if spec.write is not None:
            spec.write(root, record)
            continue
        values = _decode_member(tenant, member, record, number)
        owner = {"tenant": tenant} | ({"user_id": user_id, member.via: root} if member.via else {})
        if pending and type(pending[0]) is not member.model:
            _flush(pending)
        pending.append(member.model(**owner, **values))
        if len(pending) >= CHUNK_ROWS:
            _flush(pending)
    _flush(pending)


def _decode_member(
    tenant: Tenant, member: SubjectData, record: dict[str, Any], number: int, *, dry_run: bool = False
) -> dict[str, Any]:
    spec = _spec(member)
    if spec.write is not None:
        return {}
    values = dict(record)
    if member.via:
        values.pop(member.via, None)
    return _decode(member, values, number, tenant=tenant, dry_run=dry_run)


def _flush(pending: list[models.Model]) -> None:
    if pending:
        type(pending[0])._default_manager.bulk_create(pending)
        pending.clear()


def _row_import(
    tenant: Tenant,
    d: SubjectData,
    number: int,
    record: dict[str, Any],
    refused: Callable[[str], bool],
    summary: PortableImportSummary,
    dry_run: bool,
    stored: list[Callable[[], None]],
) -> None:
    summary.records += 1
    key = dict(zip(_spec(d).key, _root_key_of(d, record, number), strict=True))
    try:  # checked before they are looked up
        for name, value in {"user_id": record.get("user_id"), **key}.items():
            _value_check(_spec(d), name, value)
    except InvalidInput as exc:
        raise PortableError(number, f"{_spec(d).record}.{exc.message}") from None
    if _refused(record["user_id"], refused, summary):
        return
    if d.model._default_manager.filter(tenant=tenant, **key).exists():
        summary.rows_present += 1
        return
    if dry_run:
        if _spec(d).decode is None:  # a decode may store bytes (an artifact's): a dry run writes nothing
            _decode(d, record, number, tenant=tenant, dry_run=True)
        summary.rows_created += 1
        return
    fields = _decode(d, record, number, tenant=tenant)
    discard = _spec(d).discard
    undo = (lambda: discard(fields)) if discard is not None else (lambda: None)
    try:
        subject_write_check(tenant=tenant, user_id=fields["user_id"], category=d.kind)
    except SubjectErased:
        undo()
        summary.refused_users.append(fields["user_id"])
        return
    stored.append(undo)  # the chunk may still roll back
    row = d.model._default_manager.create(tenant=tenant, **fields)
    if _spec(d).after is not None:
        _spec(d).after(row, record)
    summary.rows_created += 1
