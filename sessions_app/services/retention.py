"""Retention: a tenant's policy (how long process state lives) and the sweep that enforces it.

Rules: no policy, or an empty rule, keeps everything. The sweep works in bounded batches, each its
own short transaction with a constant number of statements, keyset-paged by session id. A batch
locks its sessions with ``FOR UPDATE SKIP LOCKED`` and re-checks its condition under the lock: a
session an agent is writing to is skipped (the next run takes it), never deleted or ended from
under the write. Every write through any API moves the session's activity time (``updated_at``)
under that same lock (services/live.py), so both the idle rule and the delete rule spare a session
written to within their window. A write that waited for a batch finds the session either ended by
retention (the write reopens it) or gone (a 404, or a new session where the first write creates
one). A run interrupted between batches leaves every committed batch whole and the next run
finishes the rest. Retention is housekeeping, not erasure: it writes no receipt and no
erased-subject entry. A session a legal hold covers (``agentstate.holds``) is skipped by every rule
and counted, per rule, in the run's ``held``; a batch takes the tenant's hold lock before it
chooses its sessions, so a hold placed before the batch looked is never swept.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Value, When, Window
from django.db.models.deletion import Collector
from django.db.models.functions import RowNumber
from django.utils import timezone

from agentstate.exceptions import InvalidInput
from agentstate.holds.services import holds_lock
from agentstate.subject_data import SubjectData, declared, rows_held
from agentstate.subjects import PROCESS_STATE
from agentstate.tenancy.models import Tenant
from sessions_app.backends import RetentionRule, retention_rules
from sessions_app.models import RetentionPolicy, RetentionRun, Round, Session
from sessions_app.selectors import retention_policy_fields
from sessions_app.services.live import working_state_clear_on_commit

MAX_DAYS = 36500
MAX_KEEP = 2**31 - 1
DEFAULT_BATCH_SIZE = 200  # sessions per batch

# The categories a run reports, in the order the sweep applies them.
ENDED_SESSIONS = "ended_sessions_deleted"
IDLE_SESSIONS = "idle_sessions_ended"
ROUNDS = "rounds_deleted"
MESSAGES = "messages_dropped"


def categories() -> tuple[str, ...]:
    """What a run reports, in the order the sweep applies it: the core's rules with each
    registered backend's (``sessions_app.backends``) before the messages."""
    of_backends = tuple(rule.category for rule in retention_rules())
    return (ENDED_SESSIONS, IDLE_SESSIONS, ROUNDS, *of_backends, MESSAGES)


def _clean_rule(name: str, value: Any) -> int | None:
    if value in (None, ""):
        return None
    limit, what = (MAX_DAYS, "days") if name.endswith("_days") else (MAX_KEEP, "items")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise InvalidInput.for_field(
            name, f"must be a whole number of {what} from 1 to {limit}, or empty (keep everything)."
        )
    return value


def retention_policy_clean(**values: Any) -> dict[str, int | None]:
    """Validate the rules of a policy; every bad field is named at once. Unknown names are refused."""
    fields = retention_policy_fields()
    unknown = sorted(set(values) - set(fields))
    errors: dict[str, list[str]] = {name: ["is not a retention rule."] for name in unknown}
    cleaned: dict[str, int | None] = {}
    for name in fields:
        try:
            cleaned[name] = _clean_rule(name, values.get(name))
        except InvalidInput as exc:
            errors.update(exc.fields)
    if errors:
        raise InvalidInput(
            "Invalid retention policy: " + "; ".join(f"{k} {v[0]}" for k, v in errors.items()), fields=errors
        )
    return cleaned


def retention_policy_save(*, tenant: Tenant, **values: Any) -> RetentionPolicy:
    """Create or replace the tenant's policy (rules not given become empty: keep everything). The
    backends' rules go to ``backend_rules``, where an empty one is left out; the rules of a backend
    not installed here are kept as they were (installing it again finds them)."""
    cleaned = retention_policy_clean(**values)
    core = {name: cleaned.pop(name) for name in RetentionPolicy.RULES}
    old = RetentionPolicy.objects.filter(tenant=tenant).values_list("backend_rules", flat=True).first() or {}
    backend_rules = {name: value for name, value in old.items() if name not in cleaned}
    backend_rules.update({name: value for name, value in cleaned.items() if value is not None})
    policy, _ = RetentionPolicy.objects.update_or_create(
        tenant=tenant, defaults={**core, "backend_rules": backend_rules, "updated_at": timezone.now()}
    )
    return policy


def rows_removed(rows: QuerySet, *, dry_run: bool, derived: Counter[str] | None = None) -> int:
    """Delete ``rows`` and return how many rows went, cascades included (a session's messages,
    rounds, checkpoints...); a dry run counts the same rows the way Django's delete would collect
    them, so both runs report the same number on the same data. ``derived`` counts, by category,
    the rows of the map's ``derived_from`` declarations among them (the memories made only from
    deleted sessions)."""
    if not dry_run:
        total, by_model = rows.delete()
    else:
        collector = Collector(using=rows.db, origin=rows)
        collector.collect(rows)
        by_model = Counter({model._meta.label: len(instances) for model, instances in collector.data.items()})
        for fast in collector.fast_deletes:
            by_model[fast.model._meta.label] += fast.count()
        total = sum(by_model.values())
    if derived is not None:
        for d in declared():
            if d.derived_from is not None and d.model is not rows.model:
                derived[d.category] += by_model.get(d.model._meta.label, 0)
    return total


def rows_past_latest(model, session_pks: list[int], *, partition: list[str], order: str, keep: int) -> list[int]:
    """Ids of the rows past the ``keep`` newest (by ``order``) per partition, among these
    sessions' rows (one statement): what a keep-latest rule removes."""
    ranked = model.objects.filter(session_id__in=session_pks).annotate(
        rank=Window(RowNumber(), partition_by=[F(p) for p in partition], order_by=F(order).desc())
    )
    return list(ranked.filter(rank__gt=keep).values_list("pk", flat=True))


@dataclass(frozen=True)
class AgesWithMessages:
    """How a declared model's rows (``agentstate.subject_data``, its ``retention``) fall under
    ``drop_messages_after_days``: dropped once ``age`` (a column or an expression) is older.
    ``counted_by`` names the session's counter of these rows, kept true; ``in_history``: dropping
    them edits the history a reader sees, so the session's history generation advances."""

    age: Any = "created_at"
    counted_by: str = ""
    in_history: bool = True


def aging_with_messages() -> list[tuple[SubjectData, AgesWithMessages]]:
    return [(d, d.retention) for d in declared(PROCESS_STATE) if isinstance(d.retention, AgesWithMessages)]


@dataclass(frozen=True)
class RetentionBatch:
    """What one committed batch did, for a progress display: ``sessions`` of ``total`` sessions the
    rule looks at (``total`` is None unless the caller asked for totals)."""

    tenant_slug: str
    category: str
    removed: int
    sessions: int
    total: int | None


@dataclass
class _Sweep:
    tenant: Tenant
    policy: RetentionPolicy
    now: Any
    dry_run: bool
    batch_size: int
    on_batch: Callable[[RetentionBatch], None]
    with_totals: bool
    counts: dict[str, int] = field(default_factory=dict)
    held: dict[str, int] = field(default_factory=dict)  # sessions each rule skipped because held
    derived: Counter[str] = field(default_factory=Counter)  # rows made only from deleted sessions

    def _locked_batch(self, sessions, after: int) -> list[int]:
        """The next batch of matching sessions by id, locked; sessions locked by a writer are skipped.
        A dry run takes no lock."""
        rows = sessions.filter(tenant=self.tenant, pk__gt=after).order_by("pk")
        if not self.dry_run:
            rows = rows.select_for_update(skip_locked=True)
        return list(rows.values_list("pk", flat=True)[: self.batch_size])

    def _run(self, category: str, sessions, act: Callable[[list[int], Any], int]) -> None:
        after = 0
        self.counts.setdefault(category, 0)
        covered = rows_held(Session)  # on the tenant, the person or the session
        total = sessions.filter(tenant=self.tenant).exclude(covered).count() if self.with_totals else None
        while True:
            with transaction.atomic():
                if not self.dry_run:
                    holds_lock(tenant_pk=self.tenant.pk, exclusive=False)
                pks = self._locked_batch(sessions.exclude(covered), after)
                if not pks:  # what the rule left because held, counted once every batch has seen the holds
                    self.held[category] = sessions.filter(covered, tenant=self.tenant).count()
                    return
                removed = act(pks, sessions.filter(pk__in=pks))  # the condition again, under the lock
            self.counts[category] += removed
            after = pks[-1]
            self.on_batch(RetentionBatch(self.tenant.slug, category, removed, len(pks), total))

    def _delete_ended(self, pks: list[int], matching) -> int:
        """Rows removed with the sessions: each session and everything that goes with it."""
        if not self.dry_run:
            working_state_clear_on_commit(pks)
        return rows_removed(matching, dry_run=self.dry_run, derived=self.derived)

    def _end_idle(self, pks: list[int], matching) -> int:
        """End idle sessions as retention's own end: the next write reopens the session (a graph or
        runner carries on after an idle day), and the version stays, so a writer's If-Match or ADK
        stale check still holds."""
        if self.dry_run:
            return len(pks)
        working_state_clear_on_commit(pks)
        return matching.update(ended_at=self.now, updated_at=self.now, ended_by_retention=True)

    def _prune_rounds(self, pks: list[int], matching) -> int:
        keep = self.policy.keep_latest_rounds
        assert keep is not None  # noqa: S101 (run() sweeps rounds only under this rule)
        doomed = rows_past_latest(Round, pks, partition=["session_id"], order="round_id", keep=keep)
        return rows_removed(Round.objects.filter(pk__in=doomed), dry_run=self.dry_run) if doomed else 0

    def _apply_rule(self, rule: RetentionRule, value: int, pks: list[int], matching) -> int:
        """A backend's own rule (``sessions_app.backends``) over a locked batch."""
        return rule.apply(pks, value, self.dry_run)

    def _drop_messages(self, pks: list[int], matching) -> int:
        """Drop every declared row that ages with the messages (``AgesWithMessages``): messages
        (the OpenAI Agents SDK's items among them), the copies popped messages keep for retries,
        a framework's events. Keep each session's counters true: a counter of those rows goes
        down by what went, history_generation advances as after an edit. A fixed number of
        statements per declared model, whatever the batch."""
        days = self.policy.drop_messages_after_days
        assert days is not None  # noqa: S101 (run() drops messages only under this rule)
        cutoff = self.now - timedelta(days=days)
        removed = 0
        counted: dict[str, dict[int, int]] = {}
        edited: set[int] = set()
        for declaration, ages in aging_with_messages():
            age = F(ages.age) if isinstance(ages.age, str) else ages.age
            old = declaration.model._default_manager.filter(session_id__in=pks).alias(age=age).filter(age__lt=cutoff)
            if ages.counted_by or ages.in_history:
                per_session = dict(
                    old.values("session_id").annotate(n=Count("pk")).values_list("session_id", "n").order_by()
                )
                if ages.counted_by:
                    counted[ages.counted_by] = per_session
                if ages.in_history:
                    edited |= set(per_session)
                if not per_session:
                    continue
            removed += rows_removed(old, dry_run=self.dry_run)
        if self.dry_run or not edited:
            return removed
        Session.objects.filter(pk__in=sorted(edited)).update(
            history_generation=F("history_generation") + 1,
            **{
                counter: F(counter)
                - Case(
                    *(When(pk=pk, then=Value(n)) for pk, n in per_session.items()),
                    default=Value(0),
                    output_field=IntegerField(),
                )
                for counter, per_session in counted.items()
                if per_session
            },
        )
        return removed

    def run(self) -> None:
        policy, now = self.policy, self.now
        # The rules after the first look only at sessions it leaves: the real run has deleted the
        # others with everything in them, and a dry run must not count their rows a second time.
        remaining = Session.objects.all()
        if policy.delete_ended_after_days:
            cutoff = now - timedelta(days=policy.delete_ended_after_days)
            # A session written to since it ended (updated_at) keeps the full window from that write.
            expired = Q(ended_at__lt=cutoff, updated_at__lt=cutoff)
            self._run(ENDED_SESSIONS, Session.objects.filter(expired), self._delete_ended)
            remaining = remaining.exclude(expired)
        if policy.end_idle_after_days:
            cutoff = now - timedelta(days=policy.end_idle_after_days)
            self._run(IDLE_SESSIONS, remaining.filter(ended_at__isnull=True, updated_at__lt=cutoff), self._end_idle)
        if policy.keep_latest_rounds:
            self._run(ROUNDS, remaining.filter(last_round_id__gt=0), self._prune_rounds)
        for rule in retention_rules():
            value = policy.rule(rule.policy_field)
            if value:
                self._run(rule.category, rule.sessions(remaining), partial(self._apply_rule, rule, value))
        if policy.drop_messages_after_days:
            holds_messages = Q()
            for declaration, ages in aging_with_messages():
                holds_messages |= (
                    Q(**{f"{ages.counted_by}__gt": 0})
                    if ages.counted_by
                    else Q(Exists(declaration.model._default_manager.filter(session=OuterRef("pk"))))
                )
            self._run(MESSAGES, remaining.filter(holds_messages), self._drop_messages)


def retention_apply(
    *,
    tenant: Tenant | None = None,
    dry_run: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: Callable[[RetentionBatch], None] = lambda batch: None,
    with_totals: bool = False,
) -> RetentionRun:
    """Apply the policy of ``tenant`` (default: every tenant with one) and record the run.
    ``on_batch`` is called after each committed batch (``with_totals``: one count per rule first,
    for a progress bar); a dry run counts what would go and changes nothing but the run's record."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInput.for_field("batch_size", "must be a whole number of at least 1.")
    started, clock = timezone.now(), time.monotonic()
    policies = RetentionPolicy.objects.select_related("tenant").order_by("tenant__slug")
    if tenant is not None:
        policies = policies.filter(tenant=tenant)
    counts: dict[str, dict[str, int]] = {}
    held_counts: dict[str, dict[str, int]] = {}
    derived: dict[str, dict[str, int]] = {}
    for policy in policies:
        sweep = _Sweep(
            tenant=policy.tenant,
            policy=policy,
            now=started,
            dry_run=dry_run,
            batch_size=batch_size,
            on_batch=on_batch,
            with_totals=with_totals,
        )
        sweep.run()
        counts[policy.tenant.slug] = sweep.counts
        if any(sweep.held.values()):
            held_counts[policy.tenant.slug] = {category: n for category, n in sweep.held.items() if n}
        if any(sweep.derived.values()):
            derived[policy.tenant.slug] = {category: n for category, n in sweep.derived.items() if n}
    return RetentionRun.objects.create(
        started_at=started,
        duration_seconds=time.monotonic() - clock,
        dry_run=dry_run,
        tenant_slug=tenant.slug if tenant is not None else "",
        counts=counts,
        held=held_counts,
        derived=derived,
    )
