"""Bring an agent's history in from the store it used before (``manage.py import_sessions``).

A source reads the peer's storage through the framework's own classes and yields one ``PeerSession``
per conversation (an ADK session, an SDK branch, a LangGraph thread); ``sessions_import`` writes
each through agentstate's own services in a transaction of its own, so an interrupted run keeps what
it committed and the next one continues. A session agentstate holds already is extended with what it
lacks, by the framework's own ids: a re-run imports nothing twice. A person the erased-subject
registry holds is never written (``subject_ever_erased``), and what agentstate's rules keep out (a
store item that names no person) is left out and said so (``NotImportable``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import transaction

from agentstate.exceptions import SubjectErased
from agentstate.tenancy.models import Tenant
from userdata_app.erasure.registry import subject_ever_erased


class NotImportable(Exception):
    """What agentstate's rules refuse whatever the run (a store namespace that names no person): left
    out and reported, not a failure a re-run could fix."""


class PeerSession(Protocol):
    """One conversation in the peer's store."""

    user_id: str  # the person it belongs to, as agentstate stores the id
    label: str  # how the summary names it

    def load(self) -> Any:
        """Read it from the peer's store: outside any transaction of ours, which must not wait on
        another store (the idle-in-transaction timeout)."""
        ...

    def import_into(self, *, tenant: Tenant, loaded: Any, dry_run: bool) -> Imported:
        """Write what agentstate lacks of what ``load`` read (nothing with ``dry_run``), in the
        caller's transaction."""
        ...


@dataclass(frozen=True)
class Imported:
    created: bool  # agentstate did not hold the session
    items: int  # events, items, checkpoints and writes new to agentstate


@dataclass
class ImportSummary:
    sessions_seen: int = 0
    sessions_created: int = 0
    sessions_extended: int = 0  # held already, and items added
    items_new: int = 0
    refused_users: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # "<label>: <why>", for what agentstate's rules refuse
    failures: list[str] = field(default_factory=list)  # "<label>: <why>", for sessions left for a re-run
    stopped_at_limit: bool = False


def sessions_import(
    *,
    tenant: Tenant,
    sessions: Iterable[PeerSession],
    dry_run: bool = False,
    limit: int | None = None,
    on_session: Callable[[ImportSummary], None] = lambda summary: None,
) -> ImportSummary:
    """Import each session in a transaction of its own; a session that fails is rolled back,
    reported and left for the next run, and the others go on. ``limit`` stops after that many
    sessions were looked at (a run in parts)."""
    summary = ImportSummary()
    refused: set[str] = set()
    for peer in sessions:
        if limit is not None and summary.sessions_seen >= limit:
            summary.stopped_at_limit = True
            break
        summary.sessions_seen += 1
        try:
            loaded = peer.load()  # before the check: a LangGraph thread's owner is in its checkpoints
            if peer.user_id in refused or subject_ever_erased(tenant=tenant, user_id=peer.user_id):
                raise SubjectErased("in the erased-subject registry")
            with transaction.atomic():
                imported = peer.import_into(tenant=tenant, loaded=loaded, dry_run=dry_run)
        except NotImportable as exc:
            summary.left_out.append(f"{peer.label}: {exc}")
        except SubjectErased:  # the registry, or the services' own guard (erased while this run went on)
            if peer.user_id not in refused:
                refused.add(peer.user_id)
                summary.refused_users.append(peer.user_id)
        except Exception as exc:  # one session's failure (read or write) leaves it for the next run
            summary.failures.append(f"{peer.label}: {type(exc).__name__}: {exc}")
        else:
            summary.sessions_created += imported.created
            summary.sessions_extended += not imported.created and bool(imported.items)
            summary.items_new += imported.items
        on_session(summary)
    return summary
