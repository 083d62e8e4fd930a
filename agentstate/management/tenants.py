"""The tenant a management command's argument names. Every command that works on an existing
tenant looks it up here, so an unknown slug always says how to make the tenant."""

from __future__ import annotations

import shlex

from django.core.management.base import CommandError

from agentstate.tenancy.models import Tenant


def tenant_named(slug: str, *, argument: str = "--tenant") -> Tenant:
    """The tenant ``slug`` names; a CommandError naming the command that creates it if none does."""
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise CommandError(
            f"{argument}: no tenant {slug!r}. Create it with its first API key: "
            f"manage.py create_api_key --tenant {shlex.quote(slug)} --name <what the key is for> "
            "(or add it in the admin, Tenants > Add tenant), then run this command again."
        )
    return tenant
