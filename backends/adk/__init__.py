"""Google ADK's server side: sessions, events and app state in process state (``process``), its
``user:`` state and artifacts as people's data (``people``), and at the top the session service's
endpoints, the staff section that merges both layers, the admin and the importer. The client is
``agentstate.integrations.adk``."""
