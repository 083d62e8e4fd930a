"""The access log's entries for erasure steps (docs/COMPLIANCE.md, "The access log"): the services
that take a step write them, in the step's transaction, one entry per person the request names."""

from __future__ import annotations

from collections.abc import Iterable

from userdata_app.access_log.chain import log_kept, subjects_entries_append
from userdata_app.access_log.models import AccessEntry
from userdata_app.erasure.registry import subject_hash
from userdata_app.models import ErasureEvent, ErasureSubject

MODEL = "userdata_app.ErasureRequest"


def _hashed(subjects: Iterable[ErasureSubject]) -> dict[tuple[str, str], list[int]]:
    """``{(tenant slug, subject hash): [request pk]}``: an executed request's subjects keep only the hash."""
    found = {}
    for subject in subjects:
        slug = subject.tenant.slug
        digest = subject.subject_hash or subject_hash(tenant_slug=slug, user_id=subject.user_id)[1]
        found[(slug, digest)] = [subject.request_id]
    return found


def step_logged(*, event: ErasureEvent) -> None:
    """A step of the request (its event), for each person the request names so far."""
    if not log_kept():
        return
    subjects = ErasureSubject.objects.filter(request_id=event.request_id).select_related("tenant")
    subjects_entries_append(
        subjects=_hashed(subjects),
        actor=event.actor_name,
        action=AccessEntry.Action.ERASURE,
        model=MODEL,
        detail=(("from_status", event.from_status), ("to_status", event.to_status)),
    )


def subjects_added_logged(*, subjects: Iterable[ErasureSubject], actor_name: str) -> None:
    """People added to a request (after its first event, which named no one yet)."""
    if not log_kept():
        return
    subjects_entries_append(
        subjects=_hashed(subjects),
        actor=actor_name,
        action=AccessEntry.Action.ERASURE,
        model=MODEL,
        detail=(("step", "subject added"),),
    )
