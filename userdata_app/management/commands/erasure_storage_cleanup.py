"""Finish the clean-up an erasure could not finish right after it committed: SQLite's
write-ahead log still open in a reader, PostgreSQL statistics of a busy table, or all of it (and
the erased sessions' working state in Redis) when the process stopped between the commit and the
clean-up; the request's admin page and receipt say so in each case. Retries until done or
``--timeout``; exits non-zero if still pending."""

from typing import Any

from django.core.management.base import CommandError, CommandParser

from agentstate.db_waits import JobCommand
from userdata_app import erasure


class Command(JobCommand):
    help = (
        "Finish what erasures left pending (SQLite's WAL, statistics, working state of erased sessions), "
        "retrying until done or --timeout."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--timeout", type=float, default=60.0, help="Seconds to keep retrying (default 60).")

    def handle(self, *args: Any, timeout: float, **options: Any) -> None:
        pending = erasure.erasure_storage_retry(timeout=timeout)
        if pending:
            raise CommandError(f"Still pending after {timeout:g} s: {pending} Close the readers and run this again.")
        self.stdout.write(f"Done: {erasure.storage_cleaned()}")
