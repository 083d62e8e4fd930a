"""Google ADK's ``BaseArtifactService`` backed by agentstate: the files an agent saves for a person
(uploads, generated documents) kept with the person's other data, erased and exported with them.

    artifact_service = AgentStateArtifactService("http://localhost:8000", api_key)
    # or, as ADK's service registry builds it (adk web / adk api_server):
    #   --artifact_service_uri agentstate://localhost:8000   (key from AGENTSTATE_API_KEY)

ADK's semantics, as its ``InMemoryArtifactService`` has them: versions count from 0 and a delete
starts them again; a name starting ``user:`` is the user's, in every session, and listed with each
session's names; a missing artifact or version is ``None``; an ``artifact://`` reference is
followed on load (at most five hops, within the user's scope); a rewind's marker loads as ``None``.
The bytes travel in base64 inside JSON; the server stores them in its file storage (a directory or
an S3 bucket) and refuses one over its limit (a 413, ``ARTIFACT_MAX_BYTES``). Identifiers are
mapped as ``AgentStateSessionService`` maps them, so a person's artifacts and sessions share one
user id and erasure finds both.
"""

from __future__ import annotations

import base64
import copy
from typing import Any, cast

import httpx
from google.adk.artifacts import artifact_util
from google.adk.artifacts.base_artifact_service import ArtifactVersion, BaseArtifactService, ensure_part
from google.adk.errors.input_validation_error import InputValidationError
from google.genai import types
from pydantic_core import to_jsonable_python

from agentstate.client.calls import segment
from agentstate.client.errors import AgentStateError
from agentstate.integrations.adk import SCHEMES, AgentStateHttp, identifier_encode

__all__ = ["AgentStateArtifactService", "register"]

USER_PREFIX = "user:"


class AgentStateArtifactService(BaseArtifactService, AgentStateHttp):
    """ADK artifacts kept by an agentstate server.

    ``AgentStateArtifactService(base_url, api_key)``, or ``AgentStateArtifactService(uri="agentstate://…")``
    with the key from ``AGENTSTATE_API_KEY`` (other keyword arguments ADK's registry passes are ignored)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        uri: str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        **_registry_kwargs: Any,
    ):
        self._connect(base_url, api_key, uri=uri, timeout=timeout, transport=transport)

    @staticmethod
    def _url(app_name: str, user_id: str, *rest: str) -> str:
        artifact_util.validate_path_segment(app_name, "app_name")
        artifact_util.validate_path_segment(user_id, "user_id")
        user = f"/api/v1/adk/apps/{segment(identifier_encode(app_name))}/users/{segment(identifier_encode(user_id))}"
        return "/".join([user, "artifacts", *rest]) + "/"

    @staticmethod
    def _scope(filename: str, session_id: str | None) -> dict[str, str]:
        """The query naming one artifact, checked as ADK's in-memory service checks it."""
        query = {"filename": filename}
        if filename.startswith(USER_PREFIX):
            return query
        if session_id is None:
            raise InputValidationError("Session ID must be provided for session-scoped artifacts.")
        artifact_util.validate_path_segment(session_id, "session_id")
        return {**query, "session_id": identifier_encode(session_id)}

    async def _get(self, url: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The answer's JSON, or None for a 404."""
        try:
            return (await self._request("GET", url, params=params)).json()
        except AgentStateError as exc:
            if exc.status_code == 404:
                return None
            raise

    # --- BaseArtifactService ---------------------------------------------------------------------

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        url = self._url(app_name, user_id)
        scope = self._scope(filename, session_id)
        part = ensure_part(artifact)
        body: dict[str, Any] = {
            **scope,
            "artifact": _part_json(part, app_name=app_name, user_id=user_id, session_id=session_id),
            "custom_metadata": to_jsonable_python(copy.deepcopy(custom_metadata or {}), fallback=repr),
        }
        return (await self._request("POST", url, json=body)).json()["version"]

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> types.Part | None:
        remaining_depth = artifact_util._MAX_ARTIFACT_REFERENCE_DEPTH
        while True:
            params = self._scope(filename, session_id)
            if version is not None:
                params["version"] = str(version)
            loaded = await self._get(self._url(app_name, user_id, "load"), params)
            if loaded is None:
                return None
            part = _part(loaded["artifact"])
            if not artifact_util.is_artifact_ref(part):
                if part == types.Part() or artifact_util._is_rewind_tombstone(part):
                    return None
                return part
            target = artifact_util.resolve_artifact_reference(
                file_uri=cast(types.FileData, part.file_data).file_uri or "",
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                remaining_depth=remaining_depth,
            )
            app_name, user_id, session_id, filename, version = target
            remaining_depth -= 1

    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str | None = None) -> list[str]:
        params = {}
        if session_id is not None:
            artifact_util.validate_path_segment(session_id, "session_id")
            params["session_id"] = identifier_encode(session_id)
        return (await self._request("GET", self._url(app_name, user_id), params=params)).json()["filenames"]

    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> None:
        await self._request("DELETE", self._url(app_name, user_id), params=self._scope(filename, session_id))

    async def list_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[int]:
        versions = await self.list_artifact_versions(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )
        return [version.version for version in versions]

    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[ArtifactVersion]:
        url = self._url(app_name, user_id, "versions")
        versions = (await self._request("GET", url, params=self._scope(filename, session_id))).json()["versions"]
        return [self._version(version) for version in versions]

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> ArtifactVersion | None:
        versions = await self.list_artifact_versions(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id
        )
        if version is None:
            return versions[-1] if versions else None
        return next((found for found in versions if found.version == version), None)

    def _version(self, data: dict[str, Any]) -> ArtifactVersion:
        """ADK's ``ArtifactVersion``; its canonical URI is where the server serves the bytes."""
        return ArtifactVersion(
            version=data["version"],
            canonical_uri=f"{str(self._options['base_url']).rstrip('/')}{data['canonical_uri']}",
            custom_metadata=data["custom_metadata"],
            create_time=data["create_time"],
            mime_type=data["mime_type"],
        )


def _part_json(part: types.Part, *, app_name: str, user_id: str, session_id: str | None) -> dict[str, Any]:
    """The part as the server takes it; what ADK's in-memory service refuses is refused alike."""
    if part.inline_data is not None:
        data = base64.b64encode(part.inline_data.data or b"").decode()
        return {"inline_data": {"mime_type": part.inline_data.mime_type, "data": data}}
    if part.text is not None:
        return {"text": part.text}
    if part.file_data is not None:
        file_uri = part.file_data.file_uri
        if artifact_util.is_artifact_ref(part):
            parsed = artifact_util.parse_artifact_uri(cast(str, file_uri))
            if not parsed:
                raise InputValidationError(f"Invalid artifact reference URI: {file_uri}")
            artifact_util.validate_artifact_reference_scope(
                app_name=app_name, user_id=user_id, session_id=session_id, parsed_uri=parsed
            )
        return {"file_data": {"file_uri": file_uri, "mime_type": part.file_data.mime_type}}
    raise InputValidationError("Not supported artifact type.")


def _part(data: dict[str, Any]) -> types.Part:
    if "inline_data" in data:
        blob = data["inline_data"]
        return types.Part(inline_data=types.Blob(mime_type=blob["mime_type"], data=base64.b64decode(blob["data"])))
    if "text" in data:
        return types.Part(text=data["text"])
    file_data = data["file_data"]
    return types.Part(file_data=types.FileData(file_uri=file_data["file_uri"], mime_type=file_data["mime_type"]))


def register() -> None:
    """Makes ``--artifact_service_uri agentstate://…`` (and ``agentstates://``) build this service:
    done on import."""
    from google.adk.cli.service_registry import get_service_registry

    registry = get_service_registry()
    for scheme in SCHEMES:
        registry.register_artifact_service(scheme, lambda uri, **kwargs: AgentStateArtifactService(uri=uri, **kwargs))


register()
