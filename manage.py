#!/usr/bin/env python
"""Django's command-line utility for agentstate (installed, the same is the ``agentstate`` command)."""

from agentstate_site.cli import main

if __name__ == "__main__":
    main()
