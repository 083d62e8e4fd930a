"""ADK's artifact service over HTTP, under /api/v1/adk/apps/{app_name}/users/{user_id}/artifacts/
(agentstate.integrations.adk_artifacts is its client). The artifact's scope and name travel in the
query (a filename may hold "/"); a part travels as ADK's ``Part`` in JSON, bytes in base64, and
``content/`` serves a version's bytes as they were saved, with their content type."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agentstate.api import people
from agentstate.api.schema import error_responses
from agentstate.api.serializers import StrictInput, StringField, validated
from agentstate.api.views import TenantAPIView, TenantRequest
from agentstate.exceptions import NotFound
from agentstate.validation import clean_identifier
from backends.adk.people.artifacts import selectors, services
from backends.adk.people.artifacts.models import Artifact


class ArtifactScopeQuery(serializers.Serializer):
    session_id = StringField(required=False, help_text="The session; leave out for a user: artifact.")


class ArtifactQuery(ArtifactScopeQuery):
    filename = StringField(help_text="The artifact's name; one starting \"user:\" is the user's, in every session.")


class ArtifactVersionQuery(ArtifactQuery):
    version = serializers.IntegerField(required=False, min_value=0, help_text="Default: the latest.")


class ArtifactSaveInput(StrictInput):
    filename = StringField()
    session_id = StringField(required=False, allow_null=True)
    artifact = serializers.JSONField(
        help_text='ADK\'s Part: {"inline_data": {"mime_type", "data" (standard base64)}}, {"text": "..."} '
        'or {"file_data": {"file_uri", "mime_type"}}.'
    )
    custom_metadata = serializers.JSONField(required=False, allow_null=True)


class ArtifactVersionOut(serializers.Serializer):
    version = serializers.IntegerField()
    canonical_uri = serializers.CharField(help_text="Where content/ serves this version's bytes.")
    custom_metadata = serializers.JSONField()
    create_time = serializers.FloatField()
    mime_type = serializers.CharField(allow_null=True)
    size = serializers.IntegerField(help_text="Bytes held in storage.")


class ArtifactNamesOut(serializers.Serializer):
    filenames = serializers.ListField(child=serializers.CharField())


class ArtifactVersionsOut(serializers.Serializer):
    versions = ArtifactVersionOut(many=True)


class ArtifactLoadOut(serializers.Serializer):
    version = ArtifactVersionOut()
    artifact = serializers.JSONField(help_text="ADK's Part, as saved.")


class ArtifactView(TenantAPIView):
    """A view under ``adk/apps/{app_name}/users/{user_id}/artifacts/``."""

    reads = ("artifacts",)
    person_named_in = (people.PATH,)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.kwargs["app_name"] = clean_identifier(self.kwargs["app_name"], field="app_name")

    def scope(self, query: dict[str, Any]) -> dict[str, Any]:
        filename, session_id = services.artifact_scope_clean(
            filename=query["filename"], session_id=query.get("session_id")
        )
        return {
            "tenant": self.request.tenant,
            "app_name": self.kwargs["app_name"],
            "user_id": self.kwargs["user_id"],
            "filename": filename,
            "session_id": session_id,
        }

    def version_of(self, request: TenantRequest) -> Artifact:
        query = validated(ArtifactVersionQuery, request.query_params)
        return selectors.artifact_get(**self.scope(query), version=query.get("version"))


class ArtifactListView(ArtifactView):
    @extend_schema(
        summary="ADK artifacts: the names of a user's artifacts, and of a session's (list_artifact_keys)",
        parameters=[ArtifactScopeQuery],
        responses={200: ArtifactNamesOut, **error_responses(400)},
    )
    def get(self, request: TenantRequest, app_name: str, user_id: str) -> Response:
        session_id = validated(ArtifactScopeQuery, request.query_params).get("session_id")
        if session_id is not None:
            session_id = clean_identifier(session_id, field="session_id")
        names = selectors.artifact_filenames(
            tenant=request.tenant, app_name=app_name, user_id=user_id, session_id=session_id
        )
        return Response({"filenames": names})

    @extend_schema(
        summary="ADK artifacts: save a new version (save_artifact)",
        request=ArtifactSaveInput,
        responses={201: ArtifactVersionOut, **error_responses(400, 409, 413)},
    )
    def post(self, request: TenantRequest, app_name: str, user_id: str) -> Response:
        body = validated(ArtifactSaveInput, request.data)
        artifact = services.artifact_save(tenant=request.tenant, app_name=app_name, user_id=user_id, **body)
        return Response(selectors.artifact_version_data(artifact), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="ADK artifacts: delete an artifact with every version (delete_artifact)",
        parameters=[ArtifactQuery],
        responses={204: None, **error_responses(400)},
    )
    def delete(self, request: TenantRequest, app_name: str, user_id: str) -> Response:
        services.artifact_delete(**self.scope(validated(ArtifactQuery, request.query_params)))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ArtifactVersionListView(ArtifactView):
    @extend_schema(
        summary="ADK artifacts: an artifact's versions with their metadata, oldest first (list_artifact_versions)",
        parameters=[ArtifactQuery],
        responses={200: ArtifactVersionsOut, **error_responses(400)},
    )
    def get(self, request: TenantRequest, app_name: str, user_id: str) -> Response:
        versions = selectors.artifact_versions(**self.scope(validated(ArtifactQuery, request.query_params)))
        return Response({"versions": [selectors.artifact_version_data(artifact) for artifact in versions]})


class ArtifactLoadView(ArtifactView):
    @extend_schema(
        summary="ADK artifacts: a version (the latest by default) with its part (load_artifact)",
        parameters=[ArtifactVersionQuery],
        responses={200: ArtifactLoadOut, **error_responses(400, 404)},
    )
    def get(self, request: TenantRequest, app_name: str, user_id: str) -> Response:
        artifact = self.version_of(request)
        return Response(
            {"version": selectors.artifact_version_data(artifact), "artifact": selectors.artifact_part(artifact)}
        )


class ArtifactContentView(ArtifactView):
    """The bytes as saved, with their content type, as a download (never rendered as a page of this site)."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        return super().perform_content_negotiation(request, force=True)  # any Accept: the bytes decide

    @extend_schema(
        summary="ADK artifacts: a version's bytes, with the content type they were saved with",
        parameters=[ArtifactVersionQuery],
        responses={(200, "*/*"): OpenApiResponse(OpenApiTypes.BINARY), **error_responses(400, 404)},
    )
    def get(self, request: TenantRequest, app_name: str, user_id: str) -> HttpResponse:
        artifact = self.version_of(request)
        if artifact.kind == Artifact.Kind.FILE_DATA:
            raise NotFound("This version holds no bytes: its part is a file URI (file_data).")
        response = HttpResponse(
            selectors.artifact_content(artifact), content_type=selectors.artifact_content_type(artifact)
        )
        basename = artifact.filename.removeprefix(selectors.USER_PREFIX).rsplit("/", 1)[-1]
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=basename)
        return response
