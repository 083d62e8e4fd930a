"""Writes of artifacts: saving a version, deleting an artifact, and removing the files of deleted rows.

The bytes live in storage, outside the database transaction, so the order is the guarantee:
a save writes the file first and the row after (a committed row always has its file; a row that
did not commit has its file removed again), and a deletion removes files only after the rows'
deletion committed (``artifact_file_release``). Storage failing never loses a committed row: a
save answers 503 and stores nothing, a read 503 and the row stays, a deletion commits and leaves
the file listed in ``ArtifactFileOwed`` until ``remove_artifact_files`` deletes it.
"""

from __future__ import annotations

import base64
import binascii
import logging
import uuid
from functools import partial
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import IntegrityError, transaction
from django.db.models import Max

from agentstate.exceptions import InvalidInput, NotFound, StorageUnavailable, ValueTooLarge
from agentstate.subject_data import rows_hold_check
from agentstate.subjects import USER_DATA, subject_write_check
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier, clean_json
from backends.adk.people.artifacts import selectors
from backends.adk.people.artifacts.models import FILENAME_MAX_LENGTH, Artifact, ArtifactFileOwed
from backends.adk.process.selectors import adk_session_get

logger = logging.getLogger(__name__)


def artifact_filename_clean(value: Any, *, field: str = "filename") -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput.for_field(field, "must be a non-empty string.")
    if len(value) > FILENAME_MAX_LENGTH:
        raise InvalidInput.for_field(field, f"must be at most {FILENAME_MAX_LENGTH} characters.")
    clean_json(value, field=field)  # no NUL, no lone surrogate
    return value


def artifact_scope_clean(*, filename: Any, session_id: Any) -> tuple[str, str | None]:
    """``(filename, session_id)`` checked: a name without the ``user:`` prefix needs its session."""
    filename = artifact_filename_clean(filename)
    if session_id is not None:
        session_id = clean_identifier(session_id, field="session_id")
    if not filename.startswith(selectors.USER_PREFIX) and session_id is None:
        raise InvalidInput.for_field(
            "session_id", 'must be given for a session-scoped artifact (a filename without the "user:" prefix).'
        )
    return filename, session_id


def artifact_mime_type_clean(value: Any, *, field: str) -> str | None:
    """A part's MIME type, for every write (a save, an import): None, or a string of at most 255
    characters that a download's Content-Type header can carry."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 255:
        raise InvalidInput.for_field(field, "must be a string of at most 255 characters.")
    if not selectors.mime_type_servable(value):
        raise InvalidInput.for_field(field, "must not contain control characters (CR, LF, ...): a header carries it.")
    return clean_json(value, field=field)  # no lone surrogate


def _part_clean(part: Any) -> tuple[str, str | None, str, bytes]:
    """ADK's ``Part`` as JSON: its kind, MIME type, file URI and bytes."""
    kinds = [kind for kind in Artifact.Kind.values if isinstance(part, dict) and part.get(kind) is not None]
    if not isinstance(part, dict) or len(kinds) != 1 or set(part) - set(Artifact.Kind.values):
        raise InvalidInput.for_field("artifact", "must hold exactly one of inline_data, text or file_data.")
    kind, value = kinds[0], part[kinds[0]]
    if kind == Artifact.Kind.TEXT:
        if not isinstance(value, str):
            raise InvalidInput.for_field("artifact.text", "must be a string.")
        try:
            return kind, "text/plain", "", value.encode()
        except UnicodeEncodeError:
            raise InvalidInput.for_field("artifact.text", "must not hold lone surrogates.") from None
    if not isinstance(value, dict):
        raise InvalidInput.for_field(f"artifact.{kind}", "must be an object.")
    mime_type = artifact_mime_type_clean(value.get("mime_type"), field=f"artifact.{kind}.mime_type")
    if kind == Artifact.Kind.FILE_DATA:
        file_uri = value.get("file_uri")
        if not isinstance(file_uri, str) or not file_uri:
            raise InvalidInput.for_field("artifact.file_data.file_uri", "must be a non-empty string.")
        clean_json(file_uri, field="artifact.file_data.file_uri")
        if file_uri.startswith("artifact://"):  # a reference to another artifact: its type is the target's
            mime_type = None
        return kind, mime_type, file_uri, b""
    data = value.get("data")
    try:
        content = base64.b64decode(data if isinstance(data, str) else "-", validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput.for_field("artifact.inline_data.data", "must be the bytes in standard base64.") from None
    return kind, mime_type, "", content


def _store(content: bytes) -> str:
    """Write the bytes under a new random name; the name storage kept."""
    try:
        return storages[selectors.STORAGE].save(uuid.uuid4().hex, ContentFile(content))
    except Exception as exc:  # any backend's failure (OSError, botocore's errors): nothing was stored
        raise StorageUnavailable(type(exc).__name__) from exc


def _discard(name: str) -> None:
    """Delete the file of a row that never committed (no row names it, nothing is owed). Touches
    only the storage: the database may be what failed."""
    try:
        storages[selectors.STORAGE].delete(name)
    except Exception as exc:  # any backend's failure: the file stays, named by no row
        logger.warning("artifact file of an uncommitted save not deleted (%s)", type(exc).__name__)


def _adk_session_pk(*, tenant: Tenant, app_name: str, user_id: str, session_id: str) -> int | None:
    """The ADK session a session-scoped artifact is saved in, when this server keeps it."""
    if not session_id:
        return None
    try:
        return adk_session_get(tenant=tenant, app_name=app_name, user_id=user_id, session_id=session_id).pk
    except NotFound:
        return None


def artifact_save(
    *,
    tenant: Tenant,
    app_name: str,
    user_id: str,
    filename: Any,
    session_id: Any = None,
    artifact: Any,
    custom_metadata: Any = None,
) -> Artifact:
    """Store a new version (0 for the first, one more than the latest after): the bytes first,
    then the row. Over ``ARTIFACT_MAX_BYTES`` is a 413."""
    filename, session_id = artifact_scope_clean(filename=filename, session_id=session_id)
    kind, mime_type, file_uri, content = _part_clean(artifact)
    custom_metadata = clean_json(custom_metadata or {}, field="custom_metadata", require_object=True)
    if len(content) > settings.ARTIFACT_MAX_BYTES:
        raise ValueTooLarge(
            f"The artifact holds {len(content)} bytes, more than the limit of {settings.ARTIFACT_MAX_BYTES}.",
            fields={"artifact": [f"must hold at most {settings.ARTIFACT_MAX_BYTES} bytes."]},
        )
    stored = _store(content) if kind != Artifact.Kind.FILE_DATA else ""
    scope = {
        "tenant": tenant,
        "user_id": user_id,
        "app_name": app_name,
        "session_id": selectors.artifact_session_id(filename=filename, session_id=session_id),
        "filename": filename,
    }
    try:
        for attempt in range(3):
            try:
                with transaction.atomic():
                    subject_write_check(tenant=tenant, user_id=user_id, category=USER_DATA)
                    latest = Artifact.objects.filter(**scope).aggregate(latest=Max("version"))["latest"]
                    return Artifact.objects.create(
                        **scope,
                        adk_session_id=_adk_session_pk(
                            tenant=tenant, app_name=app_name, user_id=user_id, session_id=scope["session_id"]
                        ),
                        version=0 if latest is None else latest + 1,
                        kind=kind,
                        mime_type=mime_type,
                        file_uri=file_uri,
                        content=stored,
                        size=len(content),
                        custom_metadata=custom_metadata,
                    )
            except IntegrityError:  # a concurrent save took this version number: take the next
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")
    except BaseException:
        if stored:
            _discard(stored)
        raise


@transaction.atomic
def artifact_delete(*, tenant: Tenant, app_name: str, user_id: str, filename: Any, session_id: Any = None) -> int:
    """Delete every version of an artifact (its files once this commits); how many went. A new
    save afterwards starts again at version 0, as in ADK's own services. A legal hold on the
    tenant, the person or the artifact's ADK session refuses it (``Held``)."""
    filename, session_id = artifact_scope_clean(filename=filename, session_id=session_id)
    versions = selectors.artifact_versions(
        tenant=tenant, app_name=app_name, user_id=user_id, session_id=session_id, filename=filename
    )
    rows_hold_check(versions, tenant_pk=tenant.pk, what="this artifact")
    return versions.delete()[0]


def artifact_file_release(sender: type[Artifact], instance: Artifact, **kwargs: Any) -> None:
    """(``post_delete`` of ``Artifact``, in the deleting transaction.) List the row's file as owed
    and remove it once the deletion commits; a rollback keeps both."""
    if not instance.content:
        return
    ArtifactFileOwed.objects.create(content=instance.content)
    transaction.on_commit(partial(artifact_files_remove, [instance.content]), robust=True)


def artifact_files_remove(names: list[str]) -> int:
    """Delete these files from storage, and from the owed list those it deleted; how many. A
    storage failure is logged and leaves the name owed (``remove_artifact_files`` retries)."""
    storage = storages[selectors.STORAGE]
    removed = []
    for name in names:
        try:
            storage.delete(name)
        except Exception as exc:  # any backend's failure: retried by the sweep
            logger.warning(
                "artifact file not deleted, storage failed (%s): retried by remove_artifact_files", type(exc).__name__
            )
            continue
        removed.append(name)
    ArtifactFileOwed.objects.filter(content__in=removed).delete()
    return len(removed)


def artifact_files_owed_remove(*, batch_size: int = 1000) -> tuple[int, int]:
    """Retry the files still owed, oldest first, in batches: ``(removed, still owed)``."""
    removed, after = 0, 0
    while True:
        batch = list(
            ArtifactFileOwed.objects.filter(pk__gt=after).order_by("pk").values_list("pk", "content")[:batch_size]
        )
        if not batch:
            return removed, ArtifactFileOwed.objects.count()
        after = batch[-1][0]
        removed += artifact_files_remove([content for _, content in batch])


def artifact_portable_encode(artifact: Artifact, record: dict[str, Any]) -> dict[str, Any]:
    """An artifact's portable record carries its bytes (base64; none for a ``file_data`` link),
    not the storage's random name of them."""
    del record["content"]
    stored = artifact.content and selectors.artifact_content(artifact)
    record["data"] = base64.b64encode(stored).decode() if stored else None
    return record


def artifact_portable_decode(record: dict[str, Any]) -> dict[str, Any]:
    """The bytes of an imported artifact stored under a fresh name, as a save stores them."""
    data = record.pop("data", None)
    record["content"] = _store(base64.b64decode(data, validate=True)) if data is not None else ""
    return record


def artifact_portable_discard(record: dict[str, Any]) -> None:
    """The file of an imported artifact whose row was not written (a bad record, a rollback)."""
    if record.get("content"):
        _discard(record["content"])
