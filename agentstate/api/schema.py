"""OpenAPI schema (drf-spectacular): every operation lists the error responses it can give, all
in the one error shape, besides the ones its view declares (409, 412)."""

from __future__ import annotations

import inspect

from drf_spectacular import openapi
from drf_spectacular.utils import OpenApiResponse

from agentstate.api.errors import ErrorSerializer
from agentstate.api.people import person_key_scope

ERROR_DESCRIPTIONS = {
    400: "Invalid input; `fields` names what was refused.",
    401: "No API key, or an invalid, revoked or expired one.",
    403: "The key's scope (or the staff user's permissions) does not cover this endpoint.",
    404: "Not found in the caller's tenant.",
    409: "Conflict: `code` says which.",
    412: "If-Match does not match the current ETag.",
    413: "The body is larger than the server accepts.",
    415: "The body is not JSON.",
    429: "Too many requests; retry after `Retry-After` seconds.",
}


SESSION_CONFLICTS = ("session_exists", "session_ended", "subject_erased")


def error_responses(*codes: int, conflicts: tuple[str, ...] = SESSION_CONFLICTS) -> dict[int, OpenApiResponse]:
    """For ``extend_schema(responses=...)``: the listed statuses, each in the error shape; a 409
    names the ``conflicts`` (error codes) the endpoint can answer."""
    return {
        code: OpenApiResponse(
            ErrorSerializer,
            description=f"Conflict: `code` is {', '.join(conflicts)}." if code == 409 else ERROR_DESCRIPTIONS[code],
        )
        for code in codes
    }


# Path segments that name an action on a resource rather than a resource, and resource segments
# whose tag reads better spelled out.
TAG_NAMES = {"end": "sessions", "restore": "sessions", "data": "user data", "working-state": "working state"}


class AutoSchema(openapi.AutoSchema):
    def get_description(self) -> str:  # type: ignore[override]  # drf-spectacular's signature
        """The operation's own words: its method's docstring, else its view class's own. Inherited
        docstrings are left out: a base view's speaks to the project's developers (how it
        authenticates, where it is mounted), not to the API's users."""
        action = getattr(self.view, getattr(self.view, "action", None) or self.method.lower(), None)
        doc = getattr(action, "__doc__", None) or type(self.view).__dict__.get("__doc__")
        return inspect.cleandoc(doc) if doc else ""

    def get_tags(self) -> list[str]:
        """One tag per resource, so the docs group endpoints the way a reader looks for them:
        /users/{u}/sessions/{s}/messages/ is "messages", /users/{u}/data/ is "user data", and a
        family under its own prefix (/compliance/...) is that prefix."""
        parts = [part for part in self.path.strip("/").split("/") if part and not part.startswith("{")]
        if parts[:2] != ["api", "v1"]:
            return ["health"]
        parts = parts[2:]
        if parts[0] == "users" and len(parts) > 1:
            parts = parts[1:]
        resource = parts[1] if parts[0] == "sessions" and len(parts) > 1 else parts[0]
        return [TAG_NAMES.get(resource, resource)]

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if not self.view.get_authenticators():
            return responses
        codes = [400, 401, 403, 429]
        if "{" in self.path:
            codes.append(404)
        if self.method in ("POST", "PUT", "PATCH"):
            codes += [413, 415]
        for code in sorted(codes):
            if str(code) not in responses:
                response = self._get_response_for_code(ErrorSerializer, str(code), direction=direction)
                response["description"] = ERROR_DESCRIPTIONS[code]
                if code == 403 and hasattr(self.view, "person_named_in"):  # the views person keys reach
                    response["description"] += " " + person_key_scope(self.view.person_named_in)
                responses[str(code)] = response
        return responses
