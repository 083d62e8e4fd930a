"""/api/v1/key/: what the calling key is, so that a client holding only a key (the MCP server over
HTTP, given each caller's bearer key) can learn whose data it reaches."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from agentstate.api import people
from agentstate.api.views import TenantAPIView, TenantRequest
from agentstate.tenancy.models import APIKey


class KeyOut(serializers.Serializer):
    tenant = serializers.CharField(help_text="The slug of the key's tenant.")
    scope = serializers.CharField(allow_null=True, help_text="agent or compliance; null for a staff login.")
    user_id = serializers.CharField(
        allow_null=True, help_text="The one person the key reaches (a person key); null: the whole tenant."
    )


class KeyView(TenantAPIView):
    reads = ()
    person_named_in = people.NO_PERSON  # the caller's own key: a person key learns its own person

    @extend_schema(summary="The calling API key: its tenant, scope and person", responses={200: KeyOut})
    def get(self, request: TenantRequest) -> Response:
        """The key the request was made with: its tenant, its scope and, for a key scoped to one
        person, that person's user id (the MCP server asks it of each caller's key)."""
        key = request.auth if isinstance(request.auth, APIKey) else None
        return Response(
            {
                "tenant": request.tenant.slug,
                "scope": key.scope if key else None,
                "user_id": key.user_id if key else None,
            }
        )
