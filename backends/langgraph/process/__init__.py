"""The server side of the LangGraph checkpointer (agentstate.integrations.langgraph): threads,
checkpoints and pending writes, their rules (services, selectors) and their API."""
