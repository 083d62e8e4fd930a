"""API-key authentication: ``Authorization: Api-Key <key>`` or ``X-Api-Key: <key>``.

djangorestframework-api-key ships a permission class whose parser reads one of the two headers;
agents may send either, so this class reads both and resolves the key (cached per process, see
agentstate.tenancy.selectors) to its tenant and scope. ``request.auth`` is the APIKey,
``request.user`` stays anonymous; staff log in with Django sessions instead.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from agentstate.tenancy import selectors
from agentstate.tenancy.models import APIKey

KEYWORD = "Api-Key"


def key_from_headers(request) -> str | None:
    """The key the request carries, or None when it carries none; two different keys are refused."""
    keys = set()
    scheme, _, value = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() == KEYWORD.lower():
        keys.add(value.strip())
    header = request.META.get("HTTP_X_API_KEY")
    if header is not None:
        keys.add(header.strip())
    if len(keys) > 1:
        raise exceptions.AuthenticationFailed("Authorization and X-Api-Key carry different keys.")
    return keys.pop() if keys else None


def carries_key(request) -> bool:
    """Whether the request names an API key in either header. ``ApiKeyAuthentication`` comes first
    and then answers for it alone: a valid key authenticates it, any other is refused, and a login
    (a session cookie) is never consulted."""
    meta = request.META
    return "HTTP_X_API_KEY" in meta or meta.get("HTTP_AUTHORIZATION", "").partition(" ")[0].lower() == KEYWORD.lower()


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[AnonymousUser, APIKey] | None:
        key = key_from_headers(request)
        if key is None:
            return None
        api_key = selectors.api_key_verify(key=key)
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid, revoked or expired API key.")
        return AnonymousUser(), api_key

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Both headers in the OpenAPI schema."""

    target_class = ApiKeyAuthentication
    name = ["ApiKeyAuth", "XApiKey"]

    def get_security_definition(self, auto_schema: Any) -> list[dict[str, str]]:
        return [
            {
                "type": "apiKey",
                "in": "header",
                "name": "Authorization",
                "description": "`Api-Key <key>`, as printed by `manage.py create_api_key`.",
            },
            {"type": "apiKey", "in": "header", "name": "X-Api-Key", "description": "The key alone."},
        ]
