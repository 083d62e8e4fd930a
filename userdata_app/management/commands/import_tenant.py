"""Read a file of the portable format into a tenant (docs/OPERATIONS.md, "Moving a tenant")."""

import sys
from typing import Any

from django.core.management.base import CommandError, CommandParser

from agentstate.db_waits import JobCommand
from agentstate.exceptions import InvalidInput
from agentstate.portable import PortableError, PortableImportSummary
from userdata_app.portable import KeyRingMismatch, tenant_import


class Command(JobCommand):
    help = (
        "Import a portable-format file (export_tenant's, or a subject export's) into a tenant "
        "(--dry-run writes nothing)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", required=True, help="The tenant (created if missing).")
        parser.add_argument("file", metavar="FILE", help="The file to read ('-': standard input).")
        parser.add_argument("--dry-run", action="store_true", help="Report what would be imported; write nothing.")
        parser.add_argument("--quiet", action="store_true", help="No progress count.")

    def handle(self, *args: Any, tenant: str, file: str, dry_run: bool, quiet: bool, **options: Any) -> None:
        progress = _Progress(enabled=not quiet and sys.stderr.isatty())
        try:
            handle = sys.stdin if file == "-" else open(file, encoding="utf-8", newline="")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}.") from None
        try:
            summary, registered = tenant_import(
                tenant_slug=tenant, lines=handle, dry_run=dry_run, on_unit=progress.step
            )
        except PortableError as exc:
            raise CommandError(f"{file}: {exc} {_written_before(exc, dry_run=dry_run)}") from None
        except KeyRingMismatch as exc:
            raise CommandError(str(exc)) from None
        except InvalidInput:
            raise CommandError(f"--tenant {tenant!r}: use lower-case letters, digits, '-' and '_' only.") from None
        except UnicodeDecodeError as exc:
            raise CommandError(f"{file}: not UTF-8 text ({exc.reason}).") from None
        finally:
            if handle is not sys.stdin:
                handle.close()
            progress.done()
        for user_id in summary.refused_users:
            self.stderr.write(
                f"Refused user {user_id!r}: erased on request (erased-subject registry); nothing imported."
            )
        verb = "would import" if dry_run else "imported"
        self.stdout.write(
            f"{tenant}: {summary.records} records read; {verb} {_counts(summary)}, {registered} new erased-subject "
            f"registry entries; {len(summary.refused_users)} users refused."
        )


def _counts(summary: PortableImportSummary) -> str:
    return (
        f"{summary.sessions_created} sessions ({summary.sessions_present} held already, left as they are), "
        f"{summary.rows_created} rows ({summary.rows_present} held already)"
    )


def _written_before(error: PortableError, *, dry_run: bool) -> str:
    """What an import stopped by a bad record leaves: that record's session or chunk rolled back,
    and everything before it committed (a re-run once the file is mended skips it)."""
    if dry_run:
        return "Nothing was written (a dry run)."
    if error.committed is None:
        return "Nothing was written."
    return (
        f"Nothing of that record's session or chunk was written. Written before it, and kept: "
        f"{error.registered} new erased-subject registry entries, {_counts(error.committed)}; a re-run once "
        "the file is mended skips them."
    )


class _Progress:
    """Records read so far, on stderr, redrawn in place (a terminal only: the total is not known
    before the end of a streamed file)."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled, self.drawn = enabled, False

    def step(self, summary: PortableImportSummary) -> None:
        if self.enabled:
            sys.stderr.write(f"\r{summary.records} records, {summary.sessions_created} sessions")
            sys.stderr.flush()
            self.drawn = True

    def done(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
