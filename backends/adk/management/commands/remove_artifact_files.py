"""Delete the files of deleted artifacts that storage failed to delete when their rows went (it
was down): run it periodically beside apply_retention. Exits non-zero while files are still owed."""

from django.core.management.base import BaseCommand, CommandError

from backends.adk.people.artifacts.services import artifact_files_owed_remove


class Command(BaseCommand):
    help = "Delete artifact files whose rows are gone but which storage failed to delete."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--batch-size", type=int, default=1000, help="Files per batch.")

    def handle(self, *args, **options) -> None:
        removed, owed = artifact_files_owed_remove(batch_size=max(1, options["batch_size"]))
        if options["verbosity"] >= 1:
            self.stdout.write(f"Deleted {removed} artifact files.")
        if owed:
            raise CommandError(f"{owed} artifact files are still owed: is the artifact storage reachable?")
