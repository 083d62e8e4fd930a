"""Who may call the API: any valid API key of a tenant (agent or compliance scope), or a staff
login allowed to act as a tenant; compliance endpoints need a compliance key, or the permission the
admin requires for the same act."""

from __future__ import annotations

from rest_framework import permissions

from agentstate.tenancy.models import APIKey

STAFF_TENANT_PERMISSION = "tenancy.use_api_as_tenant"


def _staff_with(request, perm: str) -> bool:
    user = request.user
    return bool(user and user.is_active and user.is_staff and user.has_perm(perm))


class IsTenantCaller(permissions.BasePermission):
    """An API key (any scope), or staff with ``tenancy.use_api_as_tenant`` (superusers have it)."""

    message = "Use an API key, or log in as staff allowed to use the API as a tenant."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, APIKey) or _staff_with(request, STAFF_TENANT_PERMISSION)


class HasComplianceScope(permissions.BasePermission):
    """A ``compliance`` key, or staff holding the view's ``staff_permission``: the one the admin
    requires for the same act, so a login reaches through the API no more than in the admin. A
    view that names none admits no staff; ``agent`` keys are refused (403)."""

    message = "This needs an API key with the compliance scope, or the permission the admin requires for this."

    def has_permission(self, request, view) -> bool:
        if isinstance(request.auth, APIKey):
            return request.auth.scope == APIKey.Scope.COMPLIANCE
        permission = getattr(view, "staff_permission", None)
        return permission is not None and _staff_with(request, permission)
