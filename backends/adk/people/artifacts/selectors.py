"""Reads of artifacts, always within one tenant and one user: a scope's names, an artifact's
versions, a version's part (its bytes read from storage) and the person's artifacts for export."""

from __future__ import annotations

import base64
import unicodedata
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

from django.core.files.storage import storages
from django.db.models import QuerySet

from agentstate.exceptions import NotFound, StorageUnavailable
from agentstate.tenancy.models import Tenant
from backends.adk.people.artifacts.models import Artifact

STORAGE = "artifacts"  # the STORAGES alias that holds the bytes
USER_PREFIX = "user:"  # a filename with it is the user's, in every session (ADK's rule)
SERVED_UNTYPED = "application/octet-stream"


def mime_type_servable(value: str) -> bool:
    """Whether a MIME type can go in a download's Content-Type header: no control characters (a
    CR or LF would end the header, and Django refuses to send it)."""
    return not any(unicodedata.category(ch) == "Cc" for ch in value)


def artifact_content_type(artifact: Artifact) -> str:
    """The Content-Type a version's bytes are served with: its MIME type, or bytes of no stated
    type when it has none, or one stored before saves refused what a header cannot carry."""
    if artifact.kind == Artifact.Kind.TEXT:
        return "text/plain; charset=utf-8"
    mime_type = artifact.mime_type
    return mime_type if mime_type and mime_type_servable(mime_type) else SERVED_UNTYPED


def artifact_session_id(*, filename: str, session_id: str | None) -> str:
    """The ``session_id`` an artifact is stored under: "" for a ``user:`` name, whatever session it
    was saved from."""
    return "" if filename.startswith(USER_PREFIX) else session_id or ""


def artifact_versions(
    *, tenant: Tenant, app_name: str, user_id: str, session_id: str | None, filename: str
) -> QuerySet[Artifact]:
    """The versions of one artifact, oldest first."""
    return Artifact.objects.filter(
        tenant=tenant,
        user_id=user_id,
        app_name=app_name,
        session_id=artifact_session_id(filename=filename, session_id=session_id),
        filename=filename,
    ).order_by("version")


def artifact_get(
    *, tenant: Tenant, app_name: str, user_id: str, session_id: str | None, filename: str, version: int | None
) -> Artifact:
    """One version (the latest without ``version``); a missing one is not found."""
    versions = artifact_versions(
        tenant=tenant, app_name=app_name, user_id=user_id, session_id=session_id, filename=filename
    )
    artifact = versions.last() if version is None else versions.filter(version=version).first()
    if artifact is None:
        raise NotFound("Artifact not found.")
    return artifact


def artifact_filenames(*, tenant: Tenant, app_name: str, user_id: str, session_id: str | None) -> list[str]:
    """The names of the user's artifacts, and with ``session_id`` those of that session too, sorted
    as ADK sorts them (by code point)."""
    scopes = [""] if not session_id else ["", session_id]
    rows = Artifact.objects.filter(tenant=tenant, user_id=user_id, app_name=app_name, session_id__in=scopes)
    return sorted(set(rows.values_list("filename", flat=True)))


def artifact_content(artifact: Artifact) -> bytes:
    """The bytes of an ``inline_data`` or ``text`` version, read from storage."""
    try:
        with storages[STORAGE].open(artifact.content, "rb") as file:
            return file.read()
    except Exception as exc:  # any backend's failure (OSError, botocore's errors): the row stays
        raise StorageUnavailable(type(exc).__name__) from exc


def artifact_part(artifact: Artifact) -> dict[str, Any]:
    """The version as ADK's ``Part`` in JSON (bytes in standard base64)."""
    if artifact.kind == Artifact.Kind.FILE_DATA:
        return {"file_data": {"file_uri": artifact.file_uri, "mime_type": artifact.mime_type}}
    content = artifact_content(artifact)
    if artifact.kind == Artifact.Kind.TEXT:
        return {"text": content.decode()}
    return {"inline_data": {"mime_type": artifact.mime_type, "data": base64.b64encode(content).decode()}}


def artifact_content_path(artifact: Artifact) -> str:
    """Where the API serves the version's bytes (its canonical URI, relative to the server)."""
    query = {"filename": artifact.filename, "version": artifact.version}
    if artifact.session_id:
        query["session_id"] = artifact.session_id
    user = f"apps/{quote(artifact.app_name, safe='')}/users/{quote(artifact.user_id, safe='')}"
    return f"/api/v1/adk/{user}/artifacts/content/?{urlencode(query)}"


def artifact_version_data(artifact: Artifact) -> dict[str, Any]:
    """ADK's ``ArtifactVersion`` of the row, with its size."""
    return {
        "version": artifact.version,
        "canonical_uri": artifact_content_path(artifact),
        "custom_metadata": artifact.custom_metadata,
        "create_time": artifact.created_at.timestamp(),
        "mime_type": artifact.mime_type,
        "size": artifact.size,
    }


def subject_artifacts_export(*, tenant: Tenant, user_id: str) -> Iterator[dict[str, Any]]:
    """Every version of every artifact of the person, its part with the bytes in base64."""
    rows = Artifact.objects.filter(tenant=tenant, user_id=user_id).order_by(
        "app_name", "session_id", "filename", "version"
    )
    for artifact in rows.iterator(chunk_size=100):
        data = artifact_version_data(artifact)
        del data["canonical_uri"]  # the API's address: nothing of the person
        yield {
            "app_name": artifact.app_name,
            "session_id": artifact.session_id or None,
            "filename": artifact.filename,
            **data,
            "artifact": artifact_part(artifact),
        }
