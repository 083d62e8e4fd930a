"""The ``agentstate`` command: what ``manage.py`` does, for an installed service (a wheel has no
manage.py)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentstate.settings")
    try:
        from django.core.management import execute_from_command_line
    except ImportError:
        sys.exit("The agentstate command runs the service, which needs its extra: pip install 'agentstate[server]'")
    execute_from_command_line(sys.argv)
