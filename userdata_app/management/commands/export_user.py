"""Write everything held about a person (GDPR Art. 15/20) to one JSON file, or to one file of the
portable format (docs/PORTABLE_FORMAT.md) with ``--portable``."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agentstate.streaming import json_pieces
from userdata_app.access_log.recorder import subjects_exported
from userdata_app.portable import subject_export_lines
from userdata_app.selectors import subject_export_lazy

from ._subjects import add_subject_argument, parse_subjects


class Command(BaseCommand):
    help = "Export everything held about one person (one or more TENANT:USER_ID) as one JSON document."

    def add_arguments(self, parser: CommandParser) -> None:
        add_subject_argument(parser)
        parser.add_argument("--output", "-o", default="-", help="File to write (default: standard output).")
        parser.add_argument(
            "--portable",
            action="store_true",
            help="Write the portable format (JSON Lines, read back by import_tenant): one --subject only.",
        )

    def handle(self, *args: Any, subject: list[tuple[str, str]], output: str, portable: bool, **options: Any) -> None:
        # Written as it is read: an export of large histories never sits whole in memory.
        subjects = parse_subjects(subject)
        if portable and len(subjects) != 1:
            raise CommandError("--portable writes one person of one tenant: give one --subject.")
        subjects_exported(actor="manage.py", subjects=subjects, model="", pks=[])
        if portable:
            [(tenant, user_id)] = subjects
            pieces = subject_export_lines(tenant=tenant, user_id=user_id)
        else:
            pieces = json_pieces(subject_export_lazy(subjects=subjects))
        if output == "-":
            for piece in pieces:
                self.stdout.write(piece, ending="")
            if not portable:  # each record's line ends already
                self.stdout.write("")
            return
        with open(output, "w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(pieces)
            if not portable:
                handle.write("\n")
        self.stderr.write(f"Wrote {output}")
