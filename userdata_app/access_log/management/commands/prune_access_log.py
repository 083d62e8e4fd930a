"""The access log's retention: remove entries older than AGENTSTATE_ACCESS_LOG_RETENTION_DAYS from
each tenant's chain, leaving the anchor that lets verification tell it from a deletion."""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from userdata_app.access_log.chain import chain_prune, chain_tenants


class Command(BaseCommand):
    help = "Remove access-log entries past their retention, each tenant's removal anchored in its chain."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=float, default=None, help="Keep this many days (default: the setting).")

    def handle(self, *args: Any, days: float | None, **options: Any) -> None:
        keep = settings.ACCESS_LOG_RETENTION_DAYS if days is None else days
        before = timezone.now() - timedelta(days=keep)
        for slug in chain_tenants():
            removed = chain_prune(tenant=slug, before=before)
            self.stdout.write(f"{slug}: removed {removed} entries older than {before:%Y-%m-%d %H:%M} UTC.")
