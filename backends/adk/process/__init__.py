"""Google ADK's sessions, events and app state in process state (the adapter is
agentstate.integrations.adk; its endpoints, which also touch user data, are backends.adk)."""
