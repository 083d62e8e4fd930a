"""Enforce the tenants' retention policies, like Django's ``clearsessions``: run it periodically
(docs/OPERATIONS.md has cron and systemd timer examples). Safe to interrupt: every batch commits
on its own and the next run finishes the job."""
from django.core.management.base import BaseCommand, CommandError

from agentstate.exceptions import InvalidInput
from agentstate.tenancy.models import Tenant
from sessions_app import services
from sessions_app.services.retention import CATEGORIES


class Command(BaseCommand):
    help = "Apply the tenants' retention policies in bounded batches and record the run (--dry-run changes nothing)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", help="Only this tenant (default: every tenant with a policy).")
        parser.add_argument("--dry-run", action="store_true", help="Count what would be removed; remove nothing.")
        parser.add_argument("--batch-size", type=int, default=services.retention.DEFAULT_BATCH_SIZE,
                            help="Sessions per batch (each batch is one short transaction).")

    def handle(self, *args, **options) -> None:
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"No tenant with slug {options['tenant']!r}.")
        dry, verbose = options["dry_run"], options["verbosity"] >= 1
        progress = _Progress(self.stdout, tty=self.stdout.isatty()) if verbose else None
        try:
            run = services.retention_apply(
                tenant=tenant, dry_run=dry, batch_size=options["batch_size"],
                on_batch=progress.batch if progress else (lambda *a: None),
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
            for category in CATEGORIES:
                if category in counts:
                    self.stdout.write(f"{slug}: {category} {verb} {counts[category]}")
        self.stdout.write(f"Retention run #{run.pk}{' (dry run)' if dry else ''}: {run.total} rows in {run.duration_seconds:.2f} s.")


class _Progress:
    """A one-line bar redrawn in place on a terminal; one plain line per batch otherwise (logs)."""

    def __init__(self, out, *, tty: bool) -> None:
        self.out, self.tty, self.batches, self.rows = out, tty, 0, 0

    def batch(self, slug: str, category: str, removed: int) -> None:
        self.batches += 1
        self.rows += removed
        if self.tty:
            bar = "#" * (self.batches % 30)
            self.out.write(f"\r[{bar:<30}] {slug} {category}: batch {self.batches}, {self.rows} rows", ending="")
            self.out.flush()
        else:
            self.out.write(f"batch {self.batches}: {slug} {category} {removed} rows (total {self.rows})")

    def done(self) -> None:
        if self.tty and self.batches:
            self.out.write("")
