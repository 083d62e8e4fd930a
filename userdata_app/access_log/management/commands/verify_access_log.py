"""Check every tenant's access-log chain, and the roster that records each chain's beginning, and
say where one breaks or which is gone (exit status 1 if one does)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from userdata_app.access_log.chain import ROSTER, chains_verify


class Command(BaseCommand):
    help = "Verify the access log's HMAC chains; exit non-zero and name the first broken entry of each tenant."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="Only this tenant's chain (its slug).")

    def handle(self, *args: Any, tenant: str | None, **options: Any) -> None:
        broken = 0
        for verdict in chains_verify(tenant=tenant):
            slug = "the roster of chains" if verdict.tenant == ROSTER else verdict.tenant
            if verdict.ok:
                retained = (
                    f"; entries before #{verdict.retained_from} removed by retention" if verdict.retained_from else ""
                )
                self.stdout.write(f"{slug}: {verdict.entries} entries verify{retained}.")
            else:
                broken += 1
                self.stdout.write(f"{slug}: BROKEN at #{verdict.broken_at}: {verdict.problem}")
        if broken:
            raise CommandError(f"{broken} access-log chain(s) do not verify.")
