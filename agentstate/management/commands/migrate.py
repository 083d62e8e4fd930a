"""Django's ``migrate``, its transactions under the long jobs' timeouts (agentstate.db_waits) instead
of a request's: a migration may rewrite a large table, which takes longer than any request may."""

from django.core.management.commands.migrate import Command as DjangoMigrate

from agentstate.db_waits import JobCommand


class Command(JobCommand, DjangoMigrate):
    pass
