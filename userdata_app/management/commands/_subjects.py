"""``--subject TENANT:USER_ID`` arguments shared by the erasure and export commands. The user id
is kept exactly as typed and checked by the one identifier rule (``agentstate.identifiers``)."""

from django.core.management.base import CommandParser

from agentstate.identifiers import subject_argument
from agentstate.management.tenants import tenant_named
from agentstate.tenancy.models import Tenant


def add_subject_argument(parser: CommandParser) -> None:
    parser.add_argument(
        "--subject",
        action="append",
        type=subject_argument,
        required=True,
        metavar="TENANT:USER_ID",
        help="A tenant slug and a user id of the person; repeat for each account of the same person. The user id is "
        "everything after the first colon, exactly as typed (quote it: spaces count and nothing is stripped).",
    )


def parse_subjects(values: list[tuple[str, str]]) -> list[tuple[Tenant, str]]:
    """``--subject``'s pairs with their tenants (the user ids are checked by ``subject_argument``)."""
    subjects = []
    for slug, user_id in values:
        subjects.append((tenant_named(slug, argument=f"--subject {slug}:{user_id!r}"), user_id))
    return subjects
