"""Write a tenant's data, with the erased-subject registry, in the portable format
(docs/PORTABLE_FORMAT.md): the migration path to another agentstate deployment."""

from typing import Any

from django.core.management.base import CommandParser

from agentstate.db_waits import JobCommand
from agentstate.management.tenants import tenant_named
from userdata_app.portable import tenant_export_lines, tenant_export_logged


class Command(JobCommand):
    help = "Export a tenant's data in the portable JSON Lines format (read back by import_tenant)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", metavar="SLUG", required=True, help="The tenant to export.")
        parser.add_argument("--output", "-o", default="-", help="File to write (default: standard output).")

    def handle(self, *args: Any, tenant: str, output: str, **options: Any) -> None:
        found = tenant_named(tenant)
        tenant_export_logged(tenant=found, actor="manage.py")
        lines = tenant_export_lines(tenant=found)  # written as read: a tenant never sits whole in memory
        if output == "-":
            for line in lines:
                self.stdout.write(line, ending="")
            return
        with open(output, "w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(lines)
        self.stderr.write(f"Wrote {output}")
