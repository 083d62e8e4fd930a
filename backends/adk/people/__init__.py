"""Google ADK's ``user:`` state as user-attributed data (written with its event by backends.adk)."""
