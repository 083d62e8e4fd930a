"""Bring the sessions a framework kept in its own store into a tenant (docs/OPERATIONS.md,
"Importing history"). An operator's command: no API takes a database URL or a server path."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandError

from agentstate.db_waits import JobCommand
from agentstate.identifiers import identifier_argument
from agentstate.management.tenants import tenant_named
from agentstate.tenancy.models import Tenant
from sessions_app.backends import import_sources
from userdata_app.imports import ImportSummary, sessions_import


def _source(kind: str, location: str, options: dict[str, Any]) -> Any:
    """The peer store of ``kind``, as the backend that reads it registered it (``sessions_app.backends``)."""
    source = import_sources()[kind]
    if source.needs_default_user and not options["default_user"]:
        raise CommandError(f"--from {kind} needs --default-user: the owner of sessions that name no user.")
    return source.open(kind, location, options["default_user"] or "")


class Command(JobCommand):
    help = "Import the sessions a framework's own store holds into a tenant (--dry-run writes nothing)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", required=True, help="The tenant that receives the sessions.")
        parser.add_argument(
            "--from",
            dest="source",
            nargs=2,
            metavar=("KIND", "LOCATION"),
            required=True,
            help="The old store. KIND is one of: "
            + "; ".join(f"{kind} ({source.kinds[kind]})" for kind, source in import_sources().items())
            + ".",
        )
        parser.add_argument(
            "--default-user",
            metavar="USER_ID",
            type=identifier_argument,
            help="LangGraph's checkpointers and the Agents SDK: the owner of sessions that name no user (LangGraph: "
            "no user_id in the checkpoints' metadata). A store's items belong to the person their namespace names.",
        )
        parser.add_argument("--dry-run", action="store_true", help="Report what would be imported; write nothing.")
        parser.add_argument(
            "--limit", type=int, metavar="N", help="Stop after N sessions, or store namespaces (a run in parts)."
        )
        parser.add_argument("--quiet", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        kind, location = options["source"]
        if kind not in import_sources():
            raise CommandError(f"Unknown source kind {kind!r}: one of {', '.join(import_sources())}.")
        tenant = tenant_named(options["tenant"])
        source = None
        try:
            source = _source(kind, location, options)
            peers = list(source.sessions())
        except Exception as exc:  # the store's own error (missing, not that framework's, ...): the operator's to fix
            if source is not None:
                source.close()
            raise CommandError(f"Cannot read the {kind} store: {exc}") from None
        try:
            bar = _Progress(len(peers), unit=source.unit, enabled=not options["quiet"] and sys.stderr.isatty())
            summary = sessions_import(
                tenant=tenant, sessions=peers, dry_run=options["dry_run"], limit=options["limit"], on_session=bar.step
            )
            bar.done()
        finally:
            source.close()
        self._report(summary, tenant=tenant, dry_run=options["dry_run"], total=len(peers), unit=source.unit)
        if summary.failures:
            raise CommandError(f"{len(summary.failures)} {source.unit}(s) failed; run the command again once fixed.")

    def _report(self, summary: ImportSummary, *, tenant: Tenant, dry_run: bool, total: int, unit: str) -> None:
        for user_id in summary.refused_users:
            self.stderr.write(
                f"Refused user {user_id!r}: erased on request (erased-subject registry); nothing imported."
            )
        for left_out in summary.left_out:
            self.stderr.write(f"Left out: {left_out}")
        for failure in summary.failures:
            self.stderr.write(f"Failed: {failure}")
        verb = "would import" if dry_run else "imported"
        self.stdout.write(
            f"{tenant.slug}: {summary.sessions_seen} of {total} {unit} looked at; {verb} "
            f"{summary.sessions_created} new {unit}, {summary.sessions_extended} extended, "
            f"{summary.items_new} items; {len(summary.refused_users)} users refused, "
            + (f"{len(summary.left_out)} {unit} left out, " if summary.left_out else "")
            + f"{len(summary.failures)} {unit} failed."
        )
        if summary.stopped_at_limit:
            self.stdout.write("Stopped at --limit: run the command again to continue.")


class _Progress:
    """A bar on stderr redrawn in place (sessions, or the source's unit, looked at of the total), on
    a terminal only."""

    WIDTH = 30

    def __init__(self, total: int, *, unit: str, enabled: bool) -> None:
        self.total, self.unit, self.enabled = total, unit, enabled

    def step(self, summary: ImportSummary) -> None:
        if not self.enabled:
            return
        filled = round(self.WIDTH * summary.sessions_seen / self.total) if self.total else self.WIDTH
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {summary.sessions_seen}/{self.total} {self.unit}, "
            f"{summary.items_new} items"
        )
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.total:
            sys.stderr.write("\n")
