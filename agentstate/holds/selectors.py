"""What the active legal holds cover. Every deletion asks here: a single call (``hold_covering``)
for one person or session, an ``Exists`` expression (``held``) for a sweep over many rows."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery

from agentstate.holds.models import LegalHold
from agentstate.tenancy.models import Tenant


def holds_active() -> QuerySet[LegalHold]:
    return LegalHold.objects.filter(released_at__isnull=True)


def _covering(*, tenant, user_id, session_pk=None) -> QuerySet[LegalHold]:
    covers = Q(user_id="") | Q(user_id=user_id, session_pk__isnull=True)
    if session_pk is not None:
        covers |= Q(session_pk=session_pk)
    return holds_active().filter(covers, tenant=tenant)


# ``hold_covering``'s query written out, as a scalar subquery for a statement that reads more
# beside it (a pop's one read): the reference of the oldest active hold covering the session
# ``%(session_pk)s`` of the person ``%(user_id)s`` of the tenant ``%(tenant)s``. The ORM's build
# of the same subquery costs more than running it; tests hold the two to the same answers.
COVERING_HOLD_SQL = (
    f'SELECT h."reference" FROM "{LegalHold._meta.db_table}" h '  # noqa: S608 (quoted identifiers and constant SQL; values are parameters)
    'WHERE h."released_at" IS NULL AND h."tenant_id" = %(tenant)s AND (h."user_id" = \'\' '
    'OR (h."session_pk" IS NULL AND h."user_id" = %(user_id)s) OR h."session_pk" = %(session_pk)s) '
    'ORDER BY h."placed_at", h."id" LIMIT 1'
)


def holds_covering(*, tenant: Tenant | int, user_id: str = "", session_pk: int | None = None) -> QuerySet[LegalHold]:
    """The active holds on the tenant, on the person (with ``user_id``) or on the session (with
    ``session_pk``), oldest first: a subquery of a statement that checks more than holds."""
    return _covering(tenant=tenant, user_id=user_id, session_pk=session_pk).order_by("placed_at", "pk")


def hold_covering(*, tenant: Tenant | int, user_id: str = "", session_pk: int | None = None) -> LegalHold | None:
    """The oldest active hold on the tenant, on the person (with ``user_id``) or on the session
    (with ``session_pk``), or None: one indexed query."""
    return holds_covering(tenant=tenant, user_id=user_id, session_pk=session_pk).first()


def _covering_row(*, tenant: str, user_id: str, session: str | None) -> QuerySet[LegalHold]:
    return _covering(
        tenant=OuterRef(tenant), user_id=OuterRef(user_id), session_pk=OuterRef(session) if session else None
    )


def held(*, tenant: str = "tenant", user_id: str = "user_id", session: str | None = None) -> Exists:
    """For a queryset whose rows reach a person through these lookups (``session``: the session's
    primary key, for rows a session hold covers): whether an active hold covers the row."""
    return Exists(_covering_row(tenant=tenant, user_id=user_id, session=session))


def held_reference(*, tenant: str, user_id: str, session: str | None) -> Subquery:
    """``held``'s rows, named: the reference of the oldest active hold covering the row, or NULL."""
    covering = _covering_row(tenant=tenant, user_id=user_id, session=session)
    return Subquery(covering.order_by("placed_at", "pk").values("reference")[:1])


def holds_on_subject(*, tenant: Tenant, user_id: str) -> QuerySet[LegalHold]:
    """The active holds on the tenant, the person or one of their sessions."""
    return holds_active().filter(Q(user_id="") | Q(user_id=user_id), tenant=tenant).order_by("placed_at", "pk")


def holds_of(*, tenant: Tenant, user_id: str | None = None, session_pk: int | None = None) -> QuerySet[LegalHold]:
    """Every hold, active or released, on what a page shows: a tenant, a person (with their
    sessions' holds) or a session (with its person's and tenant's), newest first."""
    holds = LegalHold.objects.filter(tenant=tenant)
    if session_pk is not None:
        holds = holds.filter(Q(user_id="") | Q(user_id=user_id, session_pk__isnull=True) | Q(session_pk=session_pk))
    elif user_id is not None:
        holds = holds.filter(Q(user_id="") | Q(user_id=user_id))
    return holds.order_by("-placed_at", "-pk")


def holds_active_count() -> int:
    """The dashboard's count."""
    return holds_active().count()
