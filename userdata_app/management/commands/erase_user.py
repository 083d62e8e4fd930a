"""Erase a person's data from a shell, through the same workflow as the admin: a request is
recorded, verified and executed, and its receipt printed. ``--dry-run`` prints the preview only.
If a reader keeps SQLite's write-ahead log from being truncated, the truncation is retried for
``--storage-timeout`` seconds and the receipt says whether it is still pending.

Like the admin's confirmation page, it first shows what will be erased and asks on the terminal;
``--yes`` (``--no-input``) skips the question for scripts, and without a terminal to ask on it
refuses rather than erase unasked.

Exit codes: 0 done (or, dry, something to erase for every subject); 1 an error (bad arguments,
not confirmed, the erasure rolled back); 3 (``--dry-run``) nothing held in scope about a subject,
usually a mistyped id or tenant."""

import json
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser
from django.db import DatabaseError

from agentstate.db_waits import JobCommand
from agentstate.exceptions import DomainError
from agentstate.subject_data import counted
from agentstate.validation import identifier_visible
from userdata_app import erasure
from userdata_app.models import ErasureRequest

from ._subjects import add_subject_argument, parse_subjects

NOT_RECORDED = "not recorded: erased with manage.py erase_user"
NOTHING_HELD = 3  # the exit code of a dry run that finds nothing about a subject (docs/OPERATIONS.md)


class Command(JobCommand):
    help = "Erase everything in scope about one person (one or more TENANT:USER_ID) and print the receipt."

    def add_arguments(self, parser: CommandParser) -> None:
        add_subject_argument(parser)
        parser.add_argument(
            "--scope",
            choices=ErasureRequest.Scope.values,
            default=ErasureRequest.Scope.USER_DATA,
            help="user_data (default: user-attributed data only) or everything (also sessions and their history).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Print what would be erased; change nothing.")
        parser.add_argument(
            "--withhold-held",
            action="store_true",
            help="Erase what no legal hold covers and withhold the rest (without it, a hold stops the erasure).",
        )
        parser.add_argument("--operator", help="Username of the staff member carrying this out (recorded).")
        parser.add_argument("--requested-by", default="", help="Reference of the request, e.g. a ticket number.")
        parser.add_argument("--reason", default="", help="Notes (no personal data).")
        parser.add_argument(
            "--identity-check",
            default=NOT_RECORDED,
            help="How the requester's identity was verified (recorded with the request, as the admin's "
            f"Mark verified asks). Default: {NOT_RECORDED!r}.",
        )
        parser.add_argument(
            "--storage-timeout",
            type=float,
            default=10.0,
            help="Seconds to keep retrying SQLite's WAL truncation if a reader holds it (default 10).",
        )
        parser.add_argument(
            "--yes",
            "--no-input",
            dest="yes",
            action="store_true",
            help="Erase without asking (scripts). Without it the command shows what will be erased and "
            "asks on the terminal, and refuses when there is no terminal to ask on.",
        )

    def handle(
        self,
        *args: Any,
        subject: list[tuple[str, str]],
        scope: str,
        dry_run: bool,
        operator: str | None,
        requested_by: str,
        reason: str,
        identity_check: str,
        storage_timeout: float,
        yes: bool,
        **options: Any,
    ) -> None:
        subjects = parse_subjects(subject)
        if dry_run:
            counts = erasure.subjects_preview(subjects=subjects, scope=scope)
            self.stdout.write(json.dumps({"dry_run": True, "scope": scope, "would_erase": counts}, indent=2))
            unknown = [
                f"{tenant.slug}:{identifier_visible(user_id)}"
                for tenant, user_id in subjects
                if not any(erasure.subjects_preview(subjects=[(tenant, user_id)], scope=scope).values())
            ]
            if unknown:
                raise CommandError(
                    f"Nothing is held in this scope about {', '.join(unknown)}: check the tenant and the user id "
                    "(exactly as the API stored it).",
                    returncode=NOTHING_HELD,
                )
            return
        actor = None
        if operator:
            actor = get_user_model().objects.filter(username=operator).first()
            if actor is None:
                raise CommandError(f"--operator {operator!r}: no such user.")
        if not yes:
            self.confirm(subjects=subjects, scope=scope)
        request = None
        try:
            request = erasure.erasure_request_create(
                subjects=subjects, scope=scope, requested_by=requested_by, reason=reason, actor=actor
            )
            erasure.erasure_request_verify(request=request, identity_check=identity_check, actor=actor)
            receipt = erasure.erasure_execute(request=request, actor=actor, withhold_held=options["withhold_held"])
        except DomainError as exc:
            raise CommandError(exc.message) from None
        except DatabaseError as exc:  # before the erasure's own transaction: recording the request
            recorded = "The erasure request" if request is None else f"Erasure request {request.pk}"
            raise CommandError(
                f"Nothing was erased: {erasure.database_failure(exc)} while recording it. {recorded} may or may "
                "not be stored (received or verified, never executed): check the erasure requests before running "
                "this again."
            ) from None
        try:
            if receipt.request.storage_pending:
                erasure.erasure_storage_retry(timeout=storage_timeout)
                receipt.request.refresh_from_db()
        except DatabaseError as exc:  # the erasure committed: its receipt is below all the same
            self.stderr.write(f"The clean-up after the erasure did not run: {erasure.database_failure(exc)}.")
        self.stdout.write(json.dumps(erasure.receipt_document(receipt=receipt), indent=2))
        if receipt.request.storage_pending:
            self.stderr.write(
                f"{receipt.request.storage_pending} "
                "Run `manage.py erasure_storage_cleanup` once the readers are closed."
            )

    def confirm(self, *, subjects, scope: str) -> None:
        """Show the subjects (ids spelled out, as the admin shows them) and the rows per category
        that will be erased; go on only on "yes" typed at a terminal."""
        if not sys.stdin.isatty():
            raise CommandError(
                "Nothing erased: erase_user asks for confirmation on a terminal and there is none. "
                "Check with --dry-run, then run it with --yes (or --no-input)."
            )
        self.stdout.write(
            f"This erases, for good and in one transaction ({ErasureRequest.Scope(scope).label.lower()}):"
        )
        for tenant, user_id in subjects:
            self.stdout.write(
                f"  tenant {tenant.slug}, user id {identifier_visible(user_id)} ({len(user_id)} characters)"
            )
        counts = erasure.subjects_preview(subjects=subjects, scope=scope)
        lines = [f"  {label}: {n}" for label, n in counted(counts)] or ["  nothing"]
        self.stdout.write("\n".join(["Rows that will be erased:", *lines]))
        self.stdout.write('Type "yes" to erase: ', ending="")
        self.stdout.flush()
        if sys.stdin.readline().strip() != "yes":
            raise CommandError("Not confirmed: nothing erased.")
