"""Write everything held about a person (GDPR Art. 15/20) to one JSON file."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from agentstate.streaming import json_pieces
from userdata_app.access_log.recorder import subjects_exported
from userdata_app.selectors import subject_export_lazy

from ._subjects import add_subject_argument, parse_subjects


class Command(BaseCommand):
    help = "Export everything held about one person (one or more TENANT:USER_ID) as one JSON document."

    def add_arguments(self, parser: CommandParser) -> None:
        add_subject_argument(parser)
        parser.add_argument("--output", "-o", default="-", help="File to write (default: standard output).")

    def handle(self, *args: Any, subject: list[str], output: str, **options: Any) -> None:
        # Written as it is read: an export of large histories never sits whole in memory.
        subjects = parse_subjects(subject)
        subjects_exported(actor="manage.py", subjects=subjects, model="", pks=[])
        pieces = json_pieces(subject_export_lazy(subjects=subjects))
        if output == "-":
            for piece in pieces:
                self.stdout.write(piece, ending="")
            self.stdout.write("")
            return
        with open(output, "w", encoding="utf-8") as handle:
            handle.writelines(pieces)
            handle.write("\n")
        self.stderr.write(f"Wrote {output}")
