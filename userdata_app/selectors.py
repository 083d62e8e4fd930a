"""Reads of user-attributed data, always within one tenant."""
from __future__ import annotations

from django.db.models import QuerySet

from agentstate.exceptions import NotFound
from agentstate.tenancy.models import Tenant
from userdata_app.models import UserDatum


def user_datum_get(*, tenant: Tenant, user_id: str, key: str) -> UserDatum:
    datum = UserDatum.objects.filter(tenant=tenant, user_id=user_id, key=key).first()
    if datum is None:
        raise NotFound(f"No value stored under {key!r}.")
    return datum


def user_datum_list(*, tenant: Tenant, user_id: str) -> QuerySet[UserDatum]:
    """A user's keys in key order (served by the unique index)."""
    return UserDatum.objects.filter(tenant=tenant, user_id=user_id).order_by("key")
