"""The per-tenant HMAC chain: appending under the chain head's lock, verifying, and retention.

Each entry's ``mac`` is HMAC-SHA256 of its canonical JSON (every field but ``mac``, the previous
entry's ``mac`` included) under a key derived from the receipt key ring
(``AGENTSTATE_ERASURE_HMAC_KEYS``), which lives outside the database. Whoever can write to the
database can change rows but cannot compute a matching ``mac``: an entry edited, forged, moved or
removed from the middle breaks the chain where it happened. Retention removes a prefix and appends
an anchor entry naming the last removed entry and its ``mac``, so verification tells a prefix
removed by retention from one deleted by hand. A chain deleted whole, head and all, leaves nothing
in its tenant's rows: the roster of chains (a chain of its own, under ``ROSTER``, never pruned)
records each tenant's chain as it begins, so verification names a tenant whose chain is gone.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from userdata_app.access_log.models import AccessChainHead, AccessEntry

ANCHOR = AccessEntry.Action.RETENTION
CHAIN = AccessEntry.Action.CHAIN
ROSTER = "*"  # the roster of chains' own chain: no tenant slug holds a "*"
_MAC_FIELDS = (
    "tenant", "seq", "at", "actor", "action", "purpose", "model", "object_pks", "subject_hash", "key_id", "detail",
    "prev_mac",
)  # fmt: skip


def log_kept() -> bool:
    """The log is kept only with a current receipt key (as erasure runs only with one); without,
    the system check ``access_log.W001`` says so."""
    return settings.ERASURE_HMAC_KEY_ID in settings.ERASURE_HMAC_KEYS


def check_log_kept(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    if log_kept():
        return []
    return [
        checks.Warning(
            "No receipt key: the access log records nothing.",
            hint="Set AGENTSTATE_ERASURE_HMAC_KEYS (docs/COMPLIANCE.md, 'Keys and rotation').",
            id="access_log.W001",
        )
    ]


def _key(key_id: str) -> bytes:
    """The log's own key, derived from the receipt key ``key_id``: a receipt hash and an entry's
    mac never share a key."""
    secret = settings.ERASURE_HMAC_KEYS.get(key_id)
    if secret is None:
        raise ImproperlyConfigured(f"No receipt key {key_id!r} in AGENTSTATE_ERASURE_HMAC_KEYS: the log needs it.")
    return hmac.new(secret.encode(), b"agentstate access log", hashlib.sha256).digest()


def entry_mac(entry: AccessEntry) -> str:
    values: dict[str, Any] = {name: getattr(entry, name) for name in _MAC_FIELDS}
    values["at"] = entry.at.astimezone(UTC).isoformat()
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return hmac.new(_key(entry.key_id), canonical, hashlib.sha256).hexdigest()


def _heads_locked(tenants: list[str]) -> dict[str, AccessChainHead]:
    """The tenants' chain heads, locked in slug order until the transaction ends (created on their
    first entry). Two statements whatever the tenants: a page's log costs the same every time."""
    AccessChainHead.objects.bulk_create([AccessChainHead(tenant=t) for t in tenants], ignore_conflicts=True)
    heads = AccessChainHead.objects.select_for_update().filter(tenant__in=tenants).order_by("tenant")
    return {head.tenant: head for head in heads}


@dataclass(frozen=True)
class Pending:
    """An entry to append: everything but its place in the chain."""

    actor: str
    action: str
    model: str = ""
    object_pks: tuple[str, ...] = ()
    subject_hash: str = ""
    purpose: str = ""
    detail: tuple[tuple[str, Any], ...] = ()


def entries_append(*, pending: dict[str, list[Pending]]) -> list[AccessEntry]:
    """Append entries to each tenant's chain (``{slug: entries}``), in one transaction that holds
    their heads: servers writing at once take turns, each entry follows the one before it. A chain's
    first entry is recorded in the roster of chains too."""
    if not pending:
        return []
    with transaction.atomic():
        heads = _heads_locked(sorted(pending))
        begun = [slug for slug in sorted(pending) if heads[slug].seq == 0 and pending[slug]]
        entries = [entry for slug in sorted(pending) for entry in _chained(heads[slug], pending[slug])]
        rostered = []
        if begun:  # the roster's head is locked after the tenants' heads, by every writer alike
            roster = heads[ROSTER] = _heads_locked([ROSTER])[ROSTER]
            rostered = _chained(roster, [Pending("agentstate", CHAIN, detail=(("tenant", slug),)) for slug in begun])
        AccessEntry.objects.bulk_create(entries + rostered)
        AccessChainHead.objects.bulk_update(list(heads.values()), ["seq", "mac"])
    return entries


def chains_roster_unrecorded() -> list[str]:
    """Record on the roster every tenant chain it does not hold yet: chains begun before the roster
    existed (migration ``0004``, once, on upgrade), so that verification does not call them
    unrecorded. A chain deleted whole before then has nothing left to record. Returns the tenants."""
    if not log_kept():
        return []
    with transaction.atomic():
        roster = _heads_locked([ROSTER])[ROSTER]
        recorded = {
            detail.get("tenant")
            for detail in AccessEntry.objects.filter(tenant=ROSTER).values_list("detail", flat=True)
        }
        unrecorded = [slug for slug in chain_tenants() if slug not in recorded]
        if unrecorded:
            AccessEntry.objects.bulk_create(
                _chained(roster, [Pending("agentstate", CHAIN, detail=(("tenant", slug),)) for slug in unrecorded])
            )
            roster.save(update_fields=["seq", "mac"])
    return unrecorded


def subjects_entries_append(
    *, subjects: dict[tuple[str, str], list[Any]], actor: str, action: str, model: str, purpose: str = "", detail=()
) -> None:
    """One entry per subject (``{(tenant slug, subject hash): [pk, ...]}``), each in its tenant's chain."""
    by_tenant: dict[str, list[Pending]] = defaultdict(list)
    for (slug, digest), pks in subjects.items():
        by_tenant[slug].append(Pending(actor, action, model, tuple(pks), digest, purpose, tuple(detail)))
    entries_append(pending=by_tenant)


def _chained(head: AccessChainHead, pending: Iterable[Pending]) -> list[AccessEntry]:
    """The entries following ``head`` (advanced past them)."""
    now, key_id = timezone.now(), settings.ERASURE_HMAC_KEY_ID
    entries = []
    for item in pending:
        entry = AccessEntry(
            tenant=head.pk, seq=head.seq + 1, at=now, actor=item.actor[:150], action=item.action,
            purpose=item.purpose[:500], model=item.model, object_pks=[str(pk) for pk in item.object_pks],
            subject_hash=item.subject_hash, key_id=key_id, detail=dict(item.detail), prev_mac=head.mac,
        )  # fmt: skip
        entry.mac = entry_mac(entry)
        head.seq, head.mac = entry.seq, entry.mac
        entries.append(entry)
    return entries


# --- Verification ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One tenant's chain: ``broken_at`` is the first entry that does not verify (None: whole)."""

    tenant: str
    entries: int
    retained_from: int | None = None  # the prefix before this seq was removed by retention
    broken_at: int | None = None
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem


def chain_verify(*, tenant: str) -> Verdict:
    """Walk ``tenant``'s entries in order and say where, if anywhere, the chain breaks."""
    head = AccessChainHead.objects.filter(tenant=tenant).first()
    rows = AccessEntry.objects.filter(tenant=tenant).order_by("seq")
    anchors = {(a.detail.get("through_seq"), a.detail.get("through_mac")): a.seq for a in rows.filter(action=ANCHOR)}
    previous: AccessEntry | None = None
    count, retained_from = 0, None
    for entry in rows.iterator(chunk_size=2000):
        count += 1
        try:
            intact = hmac.compare_digest(entry.mac, entry_mac(entry))
        except ImproperlyConfigured as exc:
            return Verdict(tenant, count, retained_from, entry.seq, str(exc))
        if not intact:
            return Verdict(tenant, count, retained_from, entry.seq, f"entry #{entry.seq} was altered or forged.")
        if previous is None and entry.seq != 1:
            if (entry.seq - 1, entry.prev_mac) not in anchors:
                return Verdict(
                    tenant, count, None, entry.seq,
                    f"entries before #{entry.seq} are missing and no retention anchor accounts for them (deleted).",
                )  # fmt: skip
            retained_from = entry.seq
        elif previous is not None and entry.seq != previous.seq + 1:
            return Verdict(
                tenant, count, retained_from, entry.seq,
                f"entries #{previous.seq + 1}..#{entry.seq - 1} are missing after #{previous.seq} (deleted).",
            )  # fmt: skip
        elif entry.prev_mac != (previous.mac if previous is not None else ""):
            return Verdict(
                tenant, count, retained_from, entry.seq,
                f"entry #{entry.seq} does not follow the entry before it (reordered or replaced).",
            )  # fmt: skip
        previous = entry
    last_seq, last_mac = (previous.seq, previous.mac) if previous else (0, "")
    if head is None or (head.seq, head.mac) != (last_seq, last_mac):
        head_seq = head.seq if head is not None else 0
        return Verdict(
            tenant, count, retained_from, last_seq + 1,
            f"the chain ends at #{last_seq} but its head says #{head_seq} (entries deleted from the end).",
        )  # fmt: skip
    return Verdict(tenant, count, retained_from)


def chain_tenants() -> list[str]:
    """Every tenant with a chain (a head or an entry: a head without entries is a deleted chain)."""
    heads = AccessChainHead.objects.values_list("tenant", flat=True)
    logged = AccessEntry.objects.values_list("tenant", flat=True).distinct().order_by()
    return sorted((set(heads) | set(logged)) - {ROSTER})


def chains_verify(*, tenant: str | None = None) -> list[Verdict]:
    """The roster's chain, then every tenant's (or only ``tenant``'s): a tenant the roster recorded
    beginning a chain that is gone whole, head and all, or whose chain the roster never recorded,
    does not verify either. A log deleted whole, roster and all, leaves nothing to tell."""
    present = chain_tenants()
    rostered: dict[str, int] = {}
    for seq, detail in AccessEntry.objects.filter(tenant=ROSTER, action=CHAIN).values_list("seq", "detail"):
        rostered.setdefault(detail.get("tenant"), seq)
    verdicts = []
    if tenant is None:  # one tenant's: its chain only, and whether the roster says it is gone
        if AccessChainHead.objects.filter(tenant=ROSTER).exists() or rostered:
            verdicts.append(chain_verify(tenant=ROSTER))
        elif present:
            gone = "it is gone, head and all, while tenants' chains remain."
            verdicts.append(Verdict(ROSTER, 0, broken_at=1, problem=gone))
    for slug in [tenant] if tenant is not None else sorted(set(present) | set(rostered)):
        if slug in rostered and slug not in present:
            gone = f"its whole chain and its head are gone (the roster recorded it beginning, at #{rostered[slug]})."
            verdicts.append(Verdict(slug, 0, broken_at=1, problem=gone))
        elif slug in present:
            verdict = chain_verify(tenant=slug)
            if verdict.ok and slug not in rostered:
                verdict = Verdict(slug, verdict.entries, broken_at=1, problem="the roster of chains never recorded it.")
            verdicts.append(verdict)
        else:
            verdicts.append(Verdict(slug, 0))  # no chain, nor ever one: nobody's data was read in it
    return verdicts


# --- Retention ---------------------------------------------------------------------------------


def chain_prune(*, tenant: str, before: datetime) -> int:
    """Remove ``tenant``'s entries older than ``before`` (a prefix of the chain) and append the
    anchor that accounts for them; returns how many went."""
    with transaction.atomic():
        head = _heads_locked([tenant])[tenant]
        through = AccessEntry.objects.filter(tenant=tenant, at__lt=before).order_by("-seq").first()
        if through is None or (through.action == ANCHOR and through.seq == head.seq):
            return 0  # nothing older, or only the last anchor: removing it would anchor itself
        removed, _ = AccessEntry.objects.filter(tenant=tenant, seq__lte=through.seq).delete()
        anchor = Pending(
            actor="retention",
            action=ANCHOR,
            detail=(("through_seq", through.seq), ("through_mac", through.mac), ("removed", removed),
                    ("before", before.isoformat())),
        )  # fmt: skip
        entries = _chained(head, [anchor])
        AccessEntry.objects.bulk_create(entries)
        AccessChainHead.objects.filter(pk=head.pk).update(seq=head.seq, mac=head.mac)
    return removed
