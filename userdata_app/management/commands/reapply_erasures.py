"""Erase again, after a database restore, every subject in the erased-subject registry.

The registry keeps keyed hashes only: every (tenant, user id) present in the data is hashed
under each configured key and matched (see docs/COMPLIANCE.md). Keep a copy of the registry
outside the database (``--save-registry``) so a restore from an older backup can load it back
(``--registry-file``) before matching."""

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from agentstate.db_waits import JobCommand
from agentstate.exceptions import DomainError
from userdata_app import erasure


class Command(JobCommand):
    help = "Re-apply executed erasures to data restored from a backup."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Report matches and counts; erase nothing.")
        parser.add_argument(
            "--registry-file", help="Load registry entries from this file (written by --save-registry) first."
        )
        parser.add_argument("--save-registry", metavar="FILE", help="Write the registry to FILE and exit.")

    def handle(
        self, *args: Any, dry_run: bool, registry_file: str | None, save_registry: str | None, **options: Any
    ) -> None:
        if save_registry:
            entries = erasure.erased_subjects_export()
            with open(save_registry, "w", encoding="utf-8") as handle:
                json.dump(entries, handle, indent=2)
            self.stdout.write(f"Wrote {len(entries)} registry entries to {save_registry}.")
            return
        if registry_file:
            try:
                with open(registry_file, encoding="utf-8") as handle:
                    added = erasure.erased_subjects_import(entries=json.load(handle))
            except (OSError, ValueError, DomainError) as exc:
                raise CommandError(f"--registry-file {registry_file}: {getattr(exc, 'message', exc)}") from None
            self.stdout.write(f"Loaded {added} registry entries the database did not have.")
        summary = erasure.erasures_reapply(dry_run=dry_run)
        self.stdout.write(json.dumps({"dry_run": dry_run, **summary}, indent=2))
        if summary.get("entries_with_unknown_key"):
            self.stderr.write(
                f"{summary['entries_with_unknown_key']} registry entries use a key that is not configured: "
                "add it back to AGENTSTATE_ERASURE_HMAC_KEYS to match them."
            )
