"""Erase a person's data from a shell, through the same workflow as the admin: a request is
recorded, verified and executed, and its receipt printed. ``--dry-run`` prints the preview only.
If a reader keeps SQLite's write-ahead log from being truncated, the truncation is retried for
``--storage-timeout`` seconds and the receipt says whether it is still pending."""
import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agentstate.exceptions import DomainError
from userdata_app import erasure
from userdata_app.models import ErasureRequest

from ._subjects import add_subject_argument, parse_subjects


class Command(BaseCommand):
    help = "Erase everything in scope about one person (one or more TENANT:USER_ID) and print the receipt."

    def add_arguments(self, parser):
        add_subject_argument(parser)
        parser.add_argument("--scope", choices=ErasureRequest.Scope.values, default=ErasureRequest.Scope.USER_DATA,
                            help="user_data (default: user-attributed data only) or everything (also sessions and their history).")
        parser.add_argument("--dry-run", action="store_true", help="Print what would be erased; change nothing.")
        parser.add_argument("--operator", help="Username of the staff member carrying this out (recorded).")
        parser.add_argument("--requested-by", default="", help="Reference of the request, e.g. a ticket number.")
        parser.add_argument("--reason", default="", help="Notes (no personal data).")
        parser.add_argument("--storage-timeout", type=float, default=10.0,
                            help="Seconds to keep retrying SQLite's WAL truncation if a reader holds it (default 10).")

    def handle(self, *args, subject, scope, dry_run, operator, requested_by, reason, storage_timeout, **options):
        subjects = parse_subjects(subject)
        if dry_run:
            counts = erasure.subjects_preview(subjects=subjects, scope=scope)
            self.stdout.write(json.dumps({"dry_run": True, "scope": scope, "would_erase": counts}, indent=2))
            return
        actor = None
        if operator:
            actor = get_user_model().objects.filter(username=operator).first()
            if actor is None:
                raise CommandError(f"--operator {operator!r}: no such user.")
        try:
            request = erasure.erasure_request_create(
                subjects=subjects, scope=scope, requested_by=requested_by, reason=reason, actor=actor
            )
            erasure.erasure_request_verify(request=request, actor=actor)
            receipt = erasure.erasure_execute(request=request, actor=actor)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        if receipt.request.storage_pending:
            erasure.erasure_storage_retry(timeout=storage_timeout)
            receipt.request.refresh_from_db()
        self.stdout.write(json.dumps(erasure.receipt_document(receipt=receipt), indent=2))
        if receipt.request.storage_pending:
            self.stderr.write(f"{receipt.request.storage_pending} Run `manage.py erasure_storage_cleanup` once the readers are closed.")
