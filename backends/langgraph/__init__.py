"""LangGraph's server side: its process state (``process``: threads, checkpoints, writes, their
rules), its API, its admin and its importers. The client is ``agentstate.integrations.langgraph``."""
