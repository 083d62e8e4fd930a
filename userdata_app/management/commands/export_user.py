"""Write everything held about a person (GDPR Art. 15/20) to one JSON file."""

import json

from django.core.management.base import BaseCommand

from userdata_app.selectors import subject_export

from ._subjects import add_subject_argument, parse_subjects


class Command(BaseCommand):
    help = "Export everything held about one person (one or more TENANT:USER_ID) as one JSON document."

    def add_arguments(self, parser):
        add_subject_argument(parser)
        parser.add_argument("--output", "-o", default="-", help="File to write (default: standard output).")

    def handle(self, *args, subject, output, **options):
        document = json.dumps(subject_export(subjects=parse_subjects(subject)), indent=2, ensure_ascii=False)
        if output == "-":
            self.stdout.write(document)
            return
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(document + "\n")
        self.stderr.write(f"Wrote {output}")
