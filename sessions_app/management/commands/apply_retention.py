"""Enforce the tenants' retention policies, like Django's ``clearsessions``: run it periodically
(docs/OPERATIONS.md has cron and systemd timer examples). Safe to interrupt: every batch commits
on its own and the next run finishes the job."""

from django.core.management.base import CommandError

from agentstate.db_waits import JobCommand
from agentstate.exceptions import InvalidInput
from agentstate.management.tenants import tenant_named
from sessions_app import services
from sessions_app.services.retention import RetentionBatch, categories


class Command(JobCommand):
    help = "Apply the tenants' retention policies in bounded batches and record the run (--dry-run changes nothing)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", help="Only this tenant (default: every tenant with a policy).")
        parser.add_argument("--dry-run", action="store_true", help="Count what would be removed; remove nothing.")
        parser.add_argument(
            "--batch-size",
            type=int,
            default=services.retention.DEFAULT_BATCH_SIZE,
            help="Sessions per batch (each batch is one short transaction).",
        )

    def handle(self, *args, **options) -> None:
        tenant = None
        if options["tenant"]:
            tenant = tenant_named(options["tenant"])
        dry, verbose = options["dry_run"], options["verbosity"] >= 1
        progress = _Progress(self.stdout, tty=self.stdout.isatty()) if verbose else None
        try:
            run = services.retention_apply(
                tenant=tenant,
                dry_run=dry,
                batch_size=options["batch_size"],
                on_batch=progress.batch if progress else (lambda batch: None),
                with_totals=bool(progress and progress.tty),
            )
        except InvalidInput as exc:
            raise CommandError(str(exc)) from None
        if progress:
            progress.done()
        if not verbose:
            return
        verb = "would remove" if dry else "removed"
        if not run.counts:
            self.stdout.write("No retention policy applies: nothing removed.")
        for slug, counts in run.counts.items():
            for category in categories():
                if category in counts:
                    self.stdout.write(f"{slug}: {category} {verb} {counts[category]}")
        for slug, derived in run.derived.items():
            for category, rows in derived.items():
                self.stdout.write(f"{slug}: of which {category} made only from the sessions deleted {rows}")
        for slug, held in run.held.items():
            for category, sessions in held.items():
                self.stdout.write(f"{slug}: {category} skipped {sessions} sessions because held (legal hold)")
        self.stdout.write(
            f"Retention run #{run.pk}{' (dry run)' if dry else ''}: {run.total} rows in {run.duration_seconds:.2f} s."
        )


class _Progress:
    """On a terminal, a bar per tenant and rule redrawn in place (sessions looked at of the rule's
    total); otherwise one plain line per batch, for logs."""

    WIDTH = 30

    def __init__(self, out, *, tty: bool) -> None:
        self.out, self.tty, self.batches, self.seen = out, tty, 0, 0
        self.current: tuple[str, str] | None = None

    def batch(self, batch: RetentionBatch) -> None:
        self.batches += 1
        if (batch.tenant_slug, batch.category) != self.current:
            if self.current is not None and self.tty:
                self.out.write("")  # keep the finished bar, start the next on its own line
            self.current, self.seen = (batch.tenant_slug, batch.category), 0
        self.seen += batch.sessions
        if self.tty:
            total = max(batch.total or 0, self.seen)
            filled = round(self.WIDTH * self.seen / total) if total else self.WIDTH
            self.out.write(
                f"\r{batch.tenant_slug} {batch.category} [{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                f"{self.seen}/{total} sessions",
                ending="",
            )
            self.out.flush()
        else:
            self.out.write(
                f"batch {self.batches}: {batch.tenant_slug} {batch.category} {batch.removed} rows "
                f"({self.seen} sessions looked at)"
            )

    def done(self) -> None:
        if self.tty and self.batches:
            self.out.write("")
