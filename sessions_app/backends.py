"""Framework backends as the core sees them: each registers one ``FrameworkBackend`` from its
``AppConfig.ready`` — its framework's name (``Session.framework`` of the sessions it keeps), its
label, its retention rules, its rows in the map of people's data (``agentstate.subject_data``),
its staff section, API mounts and import sources. The core loops over what is registered and
names no framework.

What a backend must do beyond registering (docs/DESIGN.md, "Adding a framework backend"): keep
its sessions as ``Session`` rows with ``framework`` set, hang its rows off them, and make every
write activity under the session's row lock, so retention and erasure treat its data as they treat
the core's: its hand-written writes of the session row are ``services.live.activity_update_sql``
(the core's UPDATE, to which it gives only its own SET and WHERE), its others ``session_touch`` or
``update_live_session``. tests/sessions_app/test_activity_rule.py holds each registered backend to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from agentstate import subject_data
from agentstate.subject_data import SubjectData

if TYPE_CHECKING:
    from agentstate.tenancy.models import Tenant
    from sessions_app.models import Session


@dataclass(frozen=True)
class RetentionRule:
    """A rule of the tenant's retention policy that a backend applies to its own rows.

    ``policy_field`` is the name of the policy's rule that turns it on (its value: how many to
    keep, or days, kept in ``RetentionPolicy.backend_rules``), ``help_text`` what staff and the API
    read of it; ``category`` what a run reports; ``sessions`` narrows the sessions the sweep
    looks at; ``apply(session_pks, value, dry_run)`` removes (or, dry, counts) rows of those
    sessions, locked by the sweep, and returns how many."""

    policy_field: str
    help_text: str
    category: str
    sessions: Callable[[QuerySet], QuerySet]
    apply: Callable[[list[int], int, bool], int]


@dataclass(frozen=True)
class FrameworkSection:
    """A framework's part of its sessions' admin pages: ``render(session) -> HTML`` under ``title``,
    in place of the core's history (messages, rounds, checkpoints...: ``in_place_of="history"``) or
    of the latest messages alone (``"messages"``: a framework keeping its sessions through the core
    API); ``name(session)`` how staff name its sessions when the session id would not say; for a
    framework that keeps its state as messages, ``message_preview(message)`` a list row's text (of
    ``previewed`` content) and ``message_content(content)`` the value a message's page shows."""

    title: str
    render: Callable[[Session], str]
    in_place_of: str = "history"
    name: Callable[[Session], str] | None = None
    message_preview: Callable[[Any], str] | None = None
    message_content: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class ImportSource:
    """A peer store ``manage.py import_sessions --from KIND LOCATION`` reads: ``open(kind, location,
    default_user_id)`` returns the source (``userdata_app.imports``; "" when no ``--default-user``
    was given); ``needs_default_user``: its sessions may name no user, so the command asks for one."""

    kinds: dict[str, str]  # KIND: what LOCATION is, as --help says it
    open: Callable[[str, str, str], Any]
    needs_default_user: bool = False


@dataclass(frozen=True, eq=False)  # one object per backend: compared and hashed by identity
class FrameworkBackend:
    """``unit`` is what its sessions hold as staff count them ("events", "checkpoints", "items");
    ``counts(sessions)`` counts them for a page of sessions in at most one query (None: the
    session's message count). A backend that keeps its sessions through the core API (``framework``
    stays "") names them by a key of their metadata, ``metadata_key``. ``staff_section`` is its part
    of its sessions' admin pages; ``urls`` its API mounts, ``(prefix under /api/v1/, urlconf
    module)``, which the project's URLs include; ``import_sources`` the peer stores its history is
    imported from."""

    framework: str
    label: str
    retention: tuple[RetentionRule, ...] = ()
    unit: str = "messages"
    counts: Callable[[list[Session]], dict[int, int]] | None = None
    metadata_key: str = ""
    # A thread of this backend's, as a memory's source names it: ``thread_session_pk(tenant=,
    # thread_id=, user_id=)`` is its session when the person owns it.
    thread_session_pk: Callable[..., int | None] | None = None
    staff_section: FrameworkSection | None = None
    # Its rows in the map of people's data (``agentstate.subject_data``), and the models with a user
    # id that hold nothing of a person, with why: (model label, reason).
    subject_data: tuple[SubjectData, ...] = ()
    not_personal: tuple[tuple[str, str], ...] = ()
    urls: tuple[tuple[str, str], ...] = ()
    import_sources: tuple[ImportSource, ...] = ()


_backends: dict[str, FrameworkBackend] = {}


def register(backend: FrameworkBackend) -> None:
    """A backend's one registration (from its ``AppConfig.ready``): the core learns everything it
    needs of it here, its rows in the map of people's data included."""
    subject_data.register(*backend.subject_data)
    for model_label, reason in backend.not_personal:
        subject_data.register_not_personal(model_label, reason)
    _backends[backend.framework] = backend


def backends() -> list[FrameworkBackend]:
    return list(_backends.values())


def import_sources() -> dict[str, ImportSource]:
    """Every registered backend's import sources by kind."""
    return {
        kind: source for backend in _backends.values() for source in backend.import_sources for kind in source.kinds
    }


def retention_rules() -> list[RetentionRule]:
    """Every registered backend's retention rules, in registration order."""
    return [rule for backend in _backends.values() for rule in backend.retention]


def backend_get(framework: str) -> FrameworkBackend | None:
    return _backends.get(framework)


def thread_session_pk(*, tenant: Tenant, thread_id: str, user_id: str) -> int | None:
    """The session of a thread a memory's source names, by the backend that keeps threads (none
    installed: no session)."""
    for backend in _backends.values():
        if backend.thread_session_pk is not None:
            return backend.thread_session_pk(tenant=tenant, thread_id=thread_id, user_id=user_id)
    return None


def framework_label(framework: str) -> str:
    """How staff read a session's framework: the backend's label, or the name as stored."""
    backend = _backends.get(framework)
    return backend.label if backend else framework
