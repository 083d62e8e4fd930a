"""agentstate: a Django service that keeps AI-agent state apart from data about people."""
