"""``manage.py create_api_key --tenant T --name N [--scope compliance] [--expires-days D] [--user ID]``.

Prints the new key once, alone on stdout (``KEY=$(manage.py create_api_key ...)`` works); only
its hash is stored. The tenant is created when it is new. ``--user``: the key reaches that one
person's data only (docs/API.md, "Keys for one person").
"""

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from agentstate.exceptions import DomainError
from agentstate.identifiers import identifier_argument
from agentstate.tenancy.models import APIKey
from agentstate.tenancy.services import api_key_create, tenant_get_or_create


def positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError("must be at least 1")
    return number


class Command(BaseCommand):
    help = "Create an API key for a tenant (created when new) and print it once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="Tenant slug (letters, digits, - and _).")
        parser.add_argument("--name", required=True, help="What the key is for (1-50 characters).")
        parser.add_argument(
            "--scope",
            choices=APIKey.Scope.values,
            default=APIKey.Scope.AGENT,
            help="agent (default): sessions, state and user data; compliance: also erasure and subject exports.",
        )
        parser.add_argument("--expires-days", type=positive_int, default=None, help="Expire after this many days.")
        parser.add_argument(
            "--user",
            type=identifier_argument,
            default=None,
            help="Scope the key to this one person's data (the user id, exactly as typed). Default: the whole tenant.",
        )

    def handle(
        self,
        *args: Any,
        tenant: str,
        name: str,
        scope: str,
        expires_days: int | None,
        user: str | None,
        **options: Any,
    ) -> None:
        expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
        try:
            api_key, key = api_key_create(
                tenant=tenant_get_or_create(slug=tenant), name=name, scope=scope, expires_at=expires_at, user_id=user
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        expiry = f", expires {api_key.expiry_date:%Y-%m-%d %H:%M} UTC" if api_key.expiry_date else ""
        person = f", for user {api_key.user_id!r} only" if api_key.user_id is not None else ""
        self.stderr.write(
            f"API key {api_key.name!r} (prefix {api_key.prefix}, scope {api_key.scope}) for tenant "
            f"{api_key.tenant.slug}{person}{expiry}. It is shown only now; store it safely:"
        )
        self.stdout.write(key)
