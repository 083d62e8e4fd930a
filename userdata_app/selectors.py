"""Reads of user-attributed data, always within one tenant."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import QuerySet
from django.utils import timezone

from agentstate import streaming
from agentstate.exceptions import NotFound
from agentstate.subject_data import subject_export_parts
from agentstate.tenancy.models import Tenant
from userdata_app.models import AccessRequest, ErasureRequest, UserDatum


def user_datum_get(*, tenant: Tenant, user_id: str, key: str) -> UserDatum:
    datum = UserDatum.objects.filter(tenant=tenant, user_id=user_id, key=key).first()
    if datum is None:
        raise NotFound(f"No value stored under {key!r}.")
    return datum


def user_datum_list(*, tenant: Tenant, user_id: str) -> QuerySet[UserDatum]:
    """A user's keys in key order (served by the unique index)."""
    return UserDatum.objects.filter(tenant=tenant, user_id=user_id).order_by("key")


def subject_user_data_export(*, tenant: Tenant, user_id: str) -> Iterator[dict]:
    """The subject's keys and values, read in batches bounded by bytes (``agentstate.streaming``)."""
    data = streaming.rows_in_batches(
        user_datum_list(tenant=tenant, user_id=user_id), size=streaming.stored_size(UserDatum, "value")
    )
    return (
        {"key": d.key, "value": d.value, "created_at": d.created_at.isoformat(), "updated_at": d.updated_at.isoformat()}
        for d in data
    )


def subject_export(*, subjects: list[tuple[Tenant, str]]) -> dict:
    """One JSON document with everything held about a person (GDPR Art. 15/20): for each
    ``(tenant, user_id)``, every declared part (``agentstate.subject_data``): the user data and
    every session with its messages, rounds, checkpoints, transitions and working state, whole
    (``subject_export_lazy``'s iterators read)."""
    return streaming.materialized(subject_export_lazy(subjects=subjects))


def subject_export_lazy(*, subjects: list[tuple[Tenant, str]]) -> dict:
    """``subject_export`` whose lists are iterators read in batches bounded by bytes: written with
    ``agentstate.streaming.json_pieces``, an export of any size holds about one batch in memory."""
    return {
        "generated_at": timezone.now().isoformat(),
        "subjects": (
            {
                "tenant": tenant.slug,
                "user_id": user_id,
                **subject_export_parts(tenant=tenant, user_id=user_id),
            }
            for tenant, user_id in subjects
        ),
    }


def open_and_overdue(model: type[ErasureRequest] | type[AccessRequest]) -> dict[str, int]:
    """Open and overdue requests of one kind, for the admin dashboard (served by (status, due_on))."""
    open_requests = model.objects.filter(status__in=model.OPEN_STATUSES)
    return {
        "open": open_requests.count(),
        "overdue": open_requests.filter(due_on__lt=timezone.localdate()).count(),
    }


def erasure_request_summary() -> dict[str, int]:
    return open_and_overdue(ErasureRequest)


def access_request_summary() -> dict[str, int]:
    return open_and_overdue(AccessRequest)
