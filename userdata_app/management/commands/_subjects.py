"""``--subject TENANT:USER_ID`` arguments shared by the erasure and export commands. The user id
is checked by the API's ``clean_identifier`` and kept exactly as typed, like the API keeps it."""

from django.core.management.base import CommandError, CommandParser

from agentstate.exceptions import InvalidInput
from agentstate.tenancy.models import Tenant
from agentstate.validation import clean_identifier


def add_subject_argument(parser: CommandParser) -> None:
    parser.add_argument(
        "--subject",
        action="append",
        required=True,
        metavar="TENANT:USER_ID",
        help="A tenant slug and a user id of the person; repeat for each account of the same person. The user id is "
        "everything after the first colon, exactly as typed (quote it: spaces count and nothing is stripped).",
    )


def parse_subjects(values: list[str]) -> list[tuple[Tenant, str]]:
    subjects = []
    for value in values:
        slug, sep, user_id = value.partition(":")
        if not sep:
            raise CommandError(f"--subject {value!r}: use TENANT:USER_ID.")
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"--subject {value!r}: no tenant {slug!r}.")
        try:
            subjects.append((tenant, clean_identifier(user_id, field="user_id")))
        except InvalidInput as exc:
            raise CommandError(f"--subject {value!r}: {exc.message}") from None
    return subjects
