"""Delete expired memory items (a TTL that ran out), like Django's ``clearsessions``: run it
periodically beside apply_retention. Expired items are never read even before it runs."""

from django.core.management.base import BaseCommand

from userdata_app.memory.selectors import memory_items_expired_held
from userdata_app.memory.services import memory_items_expire


class Command(BaseCommand):
    help = "Delete memory items whose TTL ran out, in short batches."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--batch-size", type=int, default=1000, help="Items per batch (one transaction each).")

    def handle(self, *args, **options) -> None:
        removed = memory_items_expire(batch_size=max(1, options["batch_size"]))
        if options["verbosity"] >= 1:
            self.stdout.write(f"Deleted {removed} expired memory items.")
            held = memory_items_expired_held()
            if held:
                self.stdout.write(f"Skipped {held} expired memory items because held (legal hold).")
