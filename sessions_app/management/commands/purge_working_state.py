"""Sweep expired working state, like Django's ``clearsessions``: run it periodically (e.g. hourly
from cron or a systemd timer) when working state lives in the database. Expired entries already
read as empty; the sweep only frees their rows."""

from django.core.management.base import BaseCommand

from sessions_app.services import working_state_purge_expired


class Command(BaseCommand):
    help = "Delete working state whose TTL has passed (database store; Redis expires keys itself)."

    def handle(self, *args, **options) -> None:
        purged = working_state_purge_expired()
        if options["verbosity"] >= 1:
            self.stdout.write(f"Purged {purged} expired working-state entries.")
